"""A node written as docs/CONTRACTS.md's "Adding a node" says runs in a graph, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from replan.graphs.context import Context
from tests.support.readme import doc, python_blocks


def _example() -> str:
    (code,) = python_blocks("Adding a node (graphs/nodes/)", doc("CONTRACTS.md"))
    return code


def test_the_documented_node_runs_and_counts_its_model_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exec(compile(_example(), "CONTRACTS.md:adding-a-node", "exec"), {"__name__": "doc_example"})
    assert capsys.readouterr().out.strip() == "Hello! 1"


def test_the_documented_node_runs_under_ainvoke_too(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"__name__": "doc_example"}
    exec(compile(_example(), "CONTRACTS.md:adding-a-node", "exec"), namespace)
    capsys.readouterr()
    namespace["model"] = GenericFakeChatModel(messages=iter([AIMessage("Hi again!")]))
    graph = namespace["builder"].compile()
    run = graph.ainvoke({"messages": [("user", "hi")]}, context=Context())
    result = asyncio.run(run)
    assert result["response"] == "Hi again!" and result["usage"]["nodes"]["greet"]["calls"] == 1
