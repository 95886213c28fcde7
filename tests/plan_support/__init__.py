"""Helpers for the plan-document tests: backend factories and subprocess children."""
