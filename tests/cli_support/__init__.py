"""Helpers for the `replan` command-line tests."""
