"""Runtime settings of the plan–execute graph, passed per run with `context=`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_MODEL = "gpt-4o-mini"


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name) or default


@dataclass(kw_only=True)
class Context:
    """How to reach the chat model and whether a human approves the plan.

    Model settings apply only when the graph builds its own `ChatOpenAI` (no `model=` was given
    to `build_plan_execute_graph`). Unset fields default from the environment when created.
    """

    model: str = field(
        default_factory=lambda: _env("REPLAN_MODEL", DEFAULT_MODEL) or DEFAULT_MODEL,
        metadata={
            "description": "Name of the chat model on the OpenAI-compatible server "
            "(environment: REPLAN_MODEL)."
        },
    )
    temperature: float = field(
        default=0.0,
        metadata={"description": "Sampling temperature of the model."},
    )
    base_url: str | None = field(
        default_factory=lambda: _env("OPENAI_BASE_URL"),
        metadata={
            "description": "Base URL of an OpenAI-compatible API such as vLLM, Ollama or "
            "llama.cpp; empty means api.openai.com (environment: OPENAI_BASE_URL)."
        },
    )
    max_retries: int = field(
        default=3,
        metadata={
            "description": "How many times a failed model request (HTTP 429, 5xx, timeouts) "
            "is retried, with exponential backoff."
        },
    )
    timeout: float | None = field(
        default=120.0,
        metadata={"description": "Seconds to wait for one model request; empty means no limit."},
    )
    approve_plan: bool = field(
        default=False,
        metadata={
            "description": "Pause after planning so a human can approve, edit or reject the plan."
        },
    )
