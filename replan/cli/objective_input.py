"""The objective of `replan run` and the text of every argument: read from the argument,
stdin (`-`) or `--objective-file`, and refused when it is not valid UTF-8."""

from __future__ import annotations

import argparse
import sys

from replan.cli.output import CliError, ExitCode

MAX_OBJECTIVE_BYTES = 16 * 1024 * 1024
"""Largest objective read from stdin or `--objective-file` (more is refused)."""


def check_text(args: argparse.Namespace) -> None:
    """Refuse arguments that are not valid UTF-8 (Python hands them over as lone surrogates):
    they could not be stored unaltered."""
    for name, value in vars(args).items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and not _is_utf8(text):
                what = "the objective" if name == "objective" else f"--{name.replace('_', '-')}"
                raise CliError(ExitCode.USAGE, f"{what} is not valid UTF-8")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _decode(raw: bytes, source: str) -> str:
    if len(raw) > MAX_OBJECTIVE_BYTES:
        raise CliError(
            ExitCode.USAGE,
            f"the objective in {source} is over {MAX_OBJECTIVE_BYTES // 2**20} MiB",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(
            ExitCode.USAGE, f"the objective in {source} is not valid UTF-8 (byte {exc.start})"
        ) from None


def read_objective(args: argparse.Namespace) -> str:
    """The objective from the argument, stdin (`-`) or `--objective-file`; not blank."""
    if args.objective is not None and args.objective_file is not None:
        raise CliError(ExitCode.USAGE, "give the objective or --objective-file, not both")
    if args.objective_file is not None:
        try:
            with open(args.objective_file, "rb") as file:
                text = _decode(file.read(MAX_OBJECTIVE_BYTES + 1), args.objective_file)
        except OSError as exc:
            raise CliError(
                ExitCode.USAGE,
                f"cannot read the objective file {args.objective_file}: {exc.strerror}",
            ) from None
    elif args.objective == "-":
        text = _decode(sys.stdin.buffer.read(MAX_OBJECTIVE_BYTES + 1), "stdin")
    elif args.objective is None:
        raise CliError(
            ExitCode.USAGE, 'no objective: give it as "TEXT", - (stdin) or --objective-file PATH'
        )
    else:
        text = args.objective
    if not text.strip():
        raise CliError(ExitCode.USAGE, "the objective is empty: say what the run should achieve")
    return text
