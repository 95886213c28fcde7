"""Stopping a command from outside: Ctrl-C (SIGINT) and SIGTERM end it the same way.

`terminate_as_interrupt()` makes SIGTERM do what SIGINT does, so both take one path: while a command
runs, asyncio cancels it (LangGraph cancels the run's running tasks and keeps what finished);
at a prompt, or while the objective is read, `KeyboardInterrupt` comes at once. The command
line then says "interrupted" and exits with 130. Where SIGINT is ignored (a job started in the
background by a script), SIGTERM still stops a command the same way.

`CommandLoop().run(command)` runs a command's coroutine as `asyncio.run` does, except that a
synchronous call still working in the event loop's worker threads (a tool that does not return)
is not waited for once the command is over; `CommandLoop.busy` says whether one is, so that the
process can end without waiting for it (Python joins those threads at exit).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from types import FrameType
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class _Workers(ThreadPoolExecutor):
    """The event loop's default executor (where LangChain runs synchronous tools): it knows
    which of its calls are still working, and shutting it down does not wait for them."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="replan-worker")
        self.working: set[Future[Any]] = set()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future = super().submit(fn, *args, **kwargs)
        self.working.add(future)
        future.add_done_callback(self.working.discard)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


class CommandLoop:
    """Runs a command's coroutine on a new event loop, as `asyncio.run` does, with `_Workers`
    as its default executor."""

    def __init__(self) -> None:
        self.workers = _Workers()

    def run(self, command: Coroutine[Any, Any, T]) -> T:
        """Run `command` and close the loop; Ctrl-C cancels it and raises `KeyboardInterrupt`
        (as `asyncio.run`). Calls still working in worker threads are left working."""
        with asyncio.Runner() as runner:
            runner.get_loop().set_default_executor(self.workers)
            if not _sigint_ignored():
                return runner.run(command)
            stop = _Stop()
            try:
                return runner.run(stop.on_sigterm(command))
            except asyncio.CancelledError:
                if stop.requested:
                    raise KeyboardInterrupt from None
                raise

    @property
    def busy(self) -> bool:
        """Whether a call still works in one of the loop's worker threads."""
        return bool(self.workers.working)


class _Stop:
    """SIGTERM for a command run while SIGINT is ignored (asyncio then has no Ctrl-C handler to
    share): the signal cancels the command's task, as asyncio's Ctrl-C handler would."""

    def __init__(self) -> None:
        self.requested = False

    async def on_sigterm(self, command: Coroutine[Any, Any, T]) -> T:
        """`command`, cancelled by SIGTERM; SIGTERM's handler is put back after."""
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        previous = signal.getsignal(signal.SIGTERM)

        def cancel() -> None:
            self.requested = True
            task.cancel()

        loop.add_signal_handler(signal.SIGTERM, cancel)
        try:
            return await command
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            signal.signal(signal.SIGTERM, previous)


def _sigint_ignored() -> bool:
    """Whether SIGINT is ignored in the main thread, where this runs (asyncio then leaves it be)."""
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    )


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM's handler: what SIGINT's handler does now (called, not raised: a signal raised
    here would only be seen once a blocked read, such as a prompt's, returned)."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored or left to the system: SIGTERM still stops the command
        raise KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within this block (in the main thread), SIGTERM is handled as SIGINT (Ctrl-C)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
