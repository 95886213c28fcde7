"""The optional `langchain` package's agent middleware API, imported in one place for the
middleware replan offers to `langchain.agents.create_agent` agents (`TaskToolsMiddleware`,
`TextCallRecoveryMiddleware`), with one clear error where it is missing."""

from __future__ import annotations

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
    )
except ImportError as error:  # the optional dependency
    raise ImportError(
        "replan's middleware for create_agent (TaskToolsMiddleware, TextCallRecoveryMiddleware) "
        'needs the langchain package: pip install "replan[agents]"'
    ) from error

__all__ = ["AgentMiddleware", "AgentState", "ModelCallResult", "ModelRequest", "ModelResponse"]
