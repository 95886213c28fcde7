"""Actions run once on `langgraph dev`: the server SIGKILLed while a tool call is working (its
gate proves the moment), then started again on the same folder; the call that was in flight is
not made again without a decision, and the intents survive in the runs database (`dev_store`),
not in the server's in-memory store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from replan.testing import ScriptedOpenAIServer
from replan.testing.aegra import free_port, wait_until_ready
from tests.cli.test_actions_once import TOOLS, Script, _effects
from tests.support.dev_server import copy_repo, start_dev_server, stop_dev_server
from tests.support.kill_gates import kill_at_gate

pytestmark = pytest.mark.slow  # real dev servers, killed mid-run

GRAPH = "acting"
ACTING_GRAPH = f"""{TOOLS}
from replan import build_plan_execute_graph

graph = build_plan_execute_graph(tools=TOOLS)  # as langgraph.json's own graph: no checkpointer
"""
OBJECTIVE: dict[str, Any] = {"messages": [{"role": "user", "content": "Crash test in 1 steps"}]}


def _serving(repo: Path, env: dict[str, str], log: Path) -> tuple[Any, Any]:
    port = free_port()
    process = start_dev_server(repo, port, env, log)
    url = f"http://127.0.0.1:{port}"
    wait_until_ready("langgraph dev", f"{url}/ok", process, log.read_text)
    return process, get_sync_client(url=url)


def test_a_killed_dev_server_s_call_in_flight_waits_for_a_decision(tmp_path: Path) -> None:
    repo = copy_repo(tmp_path / "repo")
    (repo / "acting_graph.py").write_text(ACTING_GRAPH)
    config = json.loads((repo / "langgraph.json").read_text())
    config["graphs"][GRAPH] = "./acting_graph.py:graph"
    (repo / "langgraph.json").write_text(json.dumps(config))
    effects = tmp_path / "effects.txt"
    with ScriptedOpenAIServer(Script("append")) as model:
        env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": model.base_url,
               "REPLAN_DEV_DB": str(tmp_path / "dev.sqlite"), "EFFECTS": str(effects),
               "HOLD_IN": "append:b"}  # fmt: skip
        first, client = _serving(repo, env, tmp_path / "first.log")
        try:
            thread = str(client.threads.create()["thread_id"])
            client.runs.create(thread, GRAPH, input=OBJECTIVE, durability="sync")
            kill_at_gate(first, Path(f"{effects}.gate"))  # type: ignore[arg-type]
        finally:
            stop_dev_server(first)
        second, client = _serving(repo, env, tmp_path / "second.log")
        try:
            client.threads.create(thread_id=thread, if_exists="do_nothing")
            client.runs.wait(thread, GRAPH, input=None, durability="sync")
            state = client.threads.get_state(thread)
            (paused,) = {i["id"]: i for t in state["tasks"] for i in t["interrupts"]}.values()
            assert paused["value"]["action_requests"][0]["args"] == {"text": "b"}
            assert len(_effects(effects)) == 2  # not made again without a decision
            answer = {"decisions": [{"type": "respond", "message": "append b done"}]}
            done = client.runs.wait(thread, GRAPH, command={"resume": answer}, durability="sync")
        finally:
            stop_dev_server(second)
    assert isinstance(done, dict) and done["response"].startswith("All 1 steps"), done
    assert [e[:2] for e in _effects(effects)] == [("append", "a"), ("append", "b")]
