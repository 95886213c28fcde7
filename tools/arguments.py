"""Shared handling of tool arguments the model got wrong."""

from __future__ import annotations

from pydantic import ValidationError


def validation_problems(error: ValidationError) -> str:
    """Each problem as `field: message`, joined with "; "."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}"
        for item in error.errors()
    )


def explain_validation_error(error: ValidationError) -> str:
    """A compact account of bad arguments that tells the model how to retry."""
    problems = validation_problems(error)
    return f"Invalid arguments ({problems}). Nothing was changed; fix them and call again."
