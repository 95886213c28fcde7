"""Shared handling of tool arguments the model got wrong."""

from __future__ import annotations

from pydantic import ValidationError


def explain_validation_error(error: ValidationError) -> str:
    """A compact account of bad arguments that tells the model how to retry."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}"
        for item in error.errors()
    )
    return f"Invalid arguments ({problems}). Nothing was changed; fix them and call again."
