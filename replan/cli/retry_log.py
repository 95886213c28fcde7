"""Model retries on the progress lanes: the OpenAI client's debug log, read while a run streams.

The client logs why a request failed and that it retries it; the log is read here (and goes no
further) and each retry is shown on the lane of the node that made the request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.config import get_config

from replan.cli.progress import ProgressPrinter

OPENAI_LOGGER = "openai._base_client"

_RETRY_REASONS: dict[str, Callable[[tuple[Any, ...]], str]] = {
    "Encountered an HTTP status error: %i": lambda args: f"HTTP {args[0]}",
    "Encountered a timeout exception: %s": lambda args: "no answer in time",
    "Encountered exception: %s": lambda args: f"connection failed ({args[0]})",
}
_RETRYING = "Retrying request in %f seconds (retry %i of %s)"


class _RetryLog(logging.Handler):
    """Reads the OpenAI client's debug log: why a request failed, and that it is retried.

    The client logs inside the node's call, so the run's config (`get_config`) names the lane.
    """

    def __init__(self, printer: ProgressPrinter) -> None:
        super().__init__(logging.DEBUG)
        self.printer = printer
        self.reasons: dict[str | None, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        lane = self._lane()
        if (reason := _RETRY_REASONS.get(str(record.msg))) is not None:
            self.reasons[lane] = reason(args)
        elif record.msg == _RETRYING and len(args) == 3:
            seconds, attempt, attempts = args
            why = self.reasons.pop(lane, "request failed")
            self.printer.model_retry(
                lane, f"{why}, retrying in {seconds:.2g} s (retry {attempt} of {attempts})"
            )

    @staticmethod
    def _lane() -> str | None:
        try:
            namespace = get_config().get("metadata", {}).get("langgraph_checkpoint_ns", "")
        except RuntimeError:
            return None
        return str(namespace).split("|")[0] or None


@contextmanager
def model_retries_shown(printer: ProgressPrinter) -> Iterator[None]:
    """While inside, the model client's retries appear in `printer`'s lanes (its debug log is
    read here and goes no further)."""
    logger = logging.getLogger(OPENAI_LOGGER)
    handler = _RetryLog(printer)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
