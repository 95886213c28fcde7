"""What a model server says of itself (`replan.graphs.model.servers`), asked through the real
OpenAI client of a `ChatOpenAI`."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.graphs.calls import Steps
from replan.graphs.model.servers import server_of, server_owner, unenforced_modes
from replan.graphs.nodes.driver import drive
from replan.testing import MODEL_ID, ScriptedOpenAIServer


def _owner(model: ChatOpenAI) -> str | None:
    server = server_of(model)
    assert server is not None
    steps: Steps[Any] = server_owner(model, server)
    return drive(steps)


def _model(base_url: str, name: str = MODEL_ID) -> ChatOpenAI:
    return ChatOpenAI(model=name, base_url=base_url, api_key=SecretStr("test"))


def test_the_owner_is_read_once_per_server_and_names_the_modes_left_unenforced(
    server: ScriptedOpenAIServer,
) -> None:
    server.owned_by = "llamacpp"
    model = _model(server.base_url)
    assert _owner(model) == "llamacpp"
    server.owned_by = "someone else"
    assert _owner(model) == "llamacpp"  # heard once for this process
    assert server.models_listed == 1
    assert unenforced_modes("llamacpp") == {"tool_required", "tool_named"}
    assert unenforced_modes("vllm") == unenforced_modes(None) == frozenset()


def test_a_server_that_cannot_be_reached_has_no_owner() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert _owner(_model(f"http://127.0.0.1:{port}/v1")) is None


def test_a_chat_model_that_names_no_server_is_not_asked() -> None:
    assert server_of(FakeListChatModel(responses=["ok"])) is None


@pytest.mark.parametrize("name", [MODEL_ID, "not listed"])
def test_the_owner_of_the_model_named_else_of_the_first_listed(
    server: ScriptedOpenAIServer, name: str
) -> None:
    server.owned_by = "llamacpp"
    assert _owner(_model(server.base_url, name)) == "llamacpp"
