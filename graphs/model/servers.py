"""Which model server a run talks to, and what its server says of itself: who owns the models
it lists (`owned_by` in GET /models), asked once per process and server.

llama.cpp's server names its models' owner `llamacpp`. It takes a named or "required"
`tool_choice` without enforcing it (a named one is logged as the wrong type and dropped), so a
small model writes the forced call as text; a run asking in a tool mode there would learn so
from its first decision, after a request that carries every tool step's schema in its prompt
(several thousand tokens to process, a minute or more on two CPU cores). Knowing the owner,
the run starts in the mode it would have fallen back to
(`replan.graphs.model.decision_modes.fallbacks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda

from replan.graphs.calls import Call, Steps
from replan.graphs.context import DecisionMode

Server = tuple[str, str]
"""A model server as a run's chat model names it: its base URL and the model's name."""

UNENFORCED_BY_OWNER: Mapping[str, frozenset[DecisionMode]] = {
    "llamacpp": frozenset({"tool_required", "tool_named"}),
}
"""The decision modes a server takes without enforcing them, by the owner its models name."""

OWNER_TIMEOUT = 5.0
"""Seconds the models list may take; a server that does not answer in time has no known owner
(its first decision finds out what it enforces)."""

_OWNERS: dict[Server, str | None] = {}
"""The owner each server's models named (None: it did not say), as asked by this process."""

_UNREADABLE = (openai.APIError, OSError, ValueError, TypeError, AttributeError)
"""How listing the models may fail without saying anything of the server."""


def server_of(model: BaseChatModel) -> Server | None:
    """The server and model `model` talks to (a `ChatOpenAI`'s base URL and model name); None
    for a chat model that does not say."""
    base, name = getattr(model, "openai_api_base", None), getattr(model, "model_name", None)
    return (base, name) if isinstance(base, str) and isinstance(name, str) else None


def _owner(listed: Any, name: str) -> str | None:
    """The owner the models list names for model `name` (else for its first model)."""
    models = list(getattr(listed, "data", None) or [])
    chosen = next((m for m in models if getattr(m, "id", None) == name), None)
    owner = getattr(chosen or (models[0] if models else None), "owned_by", None)
    return owner if isinstance(owner, str) else None


def _listed(model: Any) -> str | None:
    """The owner, asked once (a chat model built outside replan may have its client retry)."""
    try:
        client = model.root_client.with_options(timeout=OWNER_TIMEOUT, max_retries=0)
        return _owner(client.models.list(), model.model_name)
    except _UNREADABLE:
        return None


async def _alisted(model: Any) -> str | None:
    try:
        client = model.root_async_client.with_options(timeout=OWNER_TIMEOUT, max_retries=0)
        return _owner(await client.models.list(), model.model_name)
    except _UNREADABLE:
        return None


_LIST_OWNER = RunnableLambda(_listed, afunc=_alisted, name="model_server_owner")


def server_owner(model: BaseChatModel, server: Server) -> Steps[str | None]:
    """The owner `server`'s models list names (None when it names none or cannot be read),
    asked of the server the first time this process talks to it."""
    if server not in _OWNERS:
        _OWNERS[server] = yield Call(_LIST_OWNER, model)
    return _OWNERS[server]


def unenforced_modes(owner: str | None) -> frozenset[DecisionMode]:
    """The decision modes a server whose models name `owner` takes without enforcing."""
    return UNENFORCED_BY_OWNER.get(owner or "", frozenset())


def forget_owners() -> None:
    """Forget the owners this process was told of."""
    _OWNERS.clear()
