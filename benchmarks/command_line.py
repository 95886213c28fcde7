"""What the benchmark scripts' command lines share: one-line usage errors, positive numbers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Bad usage: one line on stderr, exit 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argument type: a number of `kind` above 0."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse
