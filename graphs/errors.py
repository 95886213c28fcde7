"""Errors the plan–execute graph raises to its caller (the CLI prints their message)."""

from __future__ import annotations


class ReplanError(RuntimeError):
    """Base class of the errors raised by replan's graphs.

    A `RuntimeError`: the LangGraph API server (`langgraph dev`, LangGraph Platform) shows SDK
    clients the message of a run's error only for a few built-in types, this one among them,
    so a client sees *why* a run failed, not just "An internal error occurred". The messages
    hold no secrets.
    """


class ModelUnavailableError(ReplanError):
    """The chat model cannot be used: no API key, server unreachable, or still answering
    errors after the client's retries."""


class PlanExecuteError(ReplanError):
    """A model kept answering in a way its node cannot use, past the retry bound."""

    def __init__(self, node: str, problem: str, sent: str) -> None:
        self.node = node
        self.problem = problem
        self.sent = sent
        super().__init__(f"{node}: {problem} (the model sent: {sent})")


class InvalidInputError(ReplanError, ValueError):
    """The graph was given input it cannot work on (e.g. an objective with no text)."""
