"""What every `replan` command shares for its output: exit codes, one-line errors, stderr lines
for people and stdout that survives a closed pipe."""

from __future__ import annotations

import os
import sys
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of `replan`; each member's `meaning` is what the help and the README
    say about it."""

    meaning: str

    def __new__(cls, code: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member

    OK = 0, "the run met its objective; the answer is on stdout (check: runs can work there)"
    FAILED = (
        1,
        (
            "the run failed: an error it cannot go on from (a tool's, with --tool-errors raise) "
            "or an unexpected one (check: runs cannot work there)"
        ),
    )
    USAGE = (
        2,
        (
            "usage error: bad option or objective, a follow-up to a thread that has not ended, no "
            "plan awaiting approval"
        ),
    )
    MODEL_UNAVAILABLE = 3, "model unavailable: no API key, server unreachable, too slow or failing"
    AWAITING_APPROVAL = 4, "the plan waits for approval and there is no terminal to ask on"
    NO_SUCH_RUN = 5, "no such run: no database file, unknown thread id"
    NOT_FINISHED = 6, "the run ended without meeting its objective; its report is on stdout"
    DATABASE_UNAVAILABLE = 7, "the runs database cannot be opened, read, written or reached"
    REJECTED = (
        8,
        "the plan was rejected at review, so nothing was carried out; the reason is on stdout",
    )
    THREAD_BUSY = (
        9,
        "the thread is running in another process (one runner per thread), or was taken over "
        "by one while this run ran",
    )
    INTERRUPTED = 130, "interrupted with Ctrl-C or SIGTERM; the run is saved and resumes"


def exit_code_help() -> str:
    """The exit-code table of `replan --help`."""
    return "exit codes:\n" + "\n".join(f"  {code.value:<4} {code.meaning}" for code in ExitCode)


class CliError(Exception):
    """A failure reported as one line on stderr, with its exit code."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def say(message: str) -> None:
    """A line for people, on stderr."""
    print(message, file=sys.stderr, flush=True)


def emit(text: str) -> None:
    """Print to stdout; a reader that stopped reading (`| head`) is not an error: the rest of
    the output goes nowhere and the exit code stays the command's own."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def one_line(text: str) -> str:
    """`text` with its whitespace (newlines too) folded to single spaces."""
    return " ".join(text.split())


SNIPPET_CHARS = 60
