"""A run keeps the settings it started with: a resume that gives no context goes on with them,
one that gives some fields changes only those; the environment is read once per run."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from replan.graphs.context import OPENAI_API_URL, Context, run_context
from replan.graphs.model.client import chat_model_from_context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import ScriptedOpenAIServer
from tests.support.fake_models import Mode, both_modes, run

OBJECTIVE = "Ship it in 2 steps"
CONFIG: RunnableConfig = {"configurable": {"thread_id": "kept"}}


def _models(server: ScriptedOpenAIServer) -> list[str]:
    return [request["model"] for request in server.requests]


@both_modes
def test_an_approval_without_a_context_goes_on_with_the_runs_settings(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    started = Context(model="first-model", base_url=server.base_url, approve_plan=True)
    paused = run(graph, OBJECTIVE, mode, config=CONFIG, context=started)
    assert "__interrupt__" in paused

    result = run(graph, Command(resume="approve"), mode, config=CONFIG)

    assert result["response"].startswith("All 2 steps")
    assert set(_models(server)) == {"first-model"}
    assert graph.get_state(CONFIG).values["settings"]["base_url"] == server.base_url


@both_modes
def test_a_resume_that_gives_some_fields_changes_only_those(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    started = Context(model="first-model", base_url=server.base_url, approve_plan=True)
    run(graph, OBJECTIVE, mode, config=CONFIG, context=started)
    planned = len(server.requests)

    # as the SDK and Studio send it: a dict of the fields to change
    run(graph, Command(resume="approve"), mode, config=CONFIG, context={"model": "second-model"})

    assert set(_models(server)[:planned]) == {"first-model"}
    assert set(_models(server)[planned:]) == {"second-model"}
    kept = graph.get_state(CONFIG).values["settings"]
    assert (kept["model"], kept["base_url"], kept["approve_plan"]) == (
        "second-model",
        server.base_url,
        True,
    )


def test_the_environment_is_read_once_per_run(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("REPLAN_MODEL", "model-at-start")
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    graph.invoke({"messages": [("user", OBJECTIVE)]}, CONFIG, context={"approve_plan": True})
    monkeypatch.setenv("REPLAN_MODEL", "model-changed-later")

    graph.invoke(Command(resume="approve"), CONFIG)

    assert set(_models(server)) == {"model-at-start"}


def test_run_context_gives_the_callers_fields_over_the_saved_ones() -> None:
    saved = Context(model="saved", temperature=0.5).settings()

    assert run_context(None, saved) == Context(**saved)
    assert run_context(Context(temperature=0.0), saved).model == "saved"
    assert run_context(Context(temperature=0.0), saved).temperature == 0.0
    assert run_context(Context(model="given"), None).model == "given"
    unknown = {**saved, "a_setting_of_a_later_version": 1}
    assert run_context(None, unknown).model == "saved"


def test_importing_and_building_leaves_the_processs_warning_filters_alone() -> None:
    script = (
        "import warnings, langchain_openai, langgraph.graph, langgraph.prebuilt, openai;"
        "before = list(warnings.filters);"  # what the libraries replan builds on set
        "import replan; from replan import build_plan_execute_graph, Context, task_tools;"
        "build_plan_execute_graph(); Context();"
        "assert warnings.filters == before, warnings.filters[:3]"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_run_without_a_checkpointer_warns_of_nothing(server: ScriptedOpenAIServer) -> None:
    graph = build_plan_execute_graph(task_tools="compact")
    context = Context(model="scripted-model", base_url=server.base_url)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = graph.invoke({"messages": [("user", OBJECTIVE)]}, context=context)
    assert result["response"].startswith("All 2 steps")


def test_a_run_without_a_base_url_keeps_talking_to_openai_whatever_the_environment_says_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread started with no base URL stores none; its resume must not follow an
    `OPENAI_BASE_URL` set since (the environment is read when the run's Context is made)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    started = Context()
    assert started.base_url is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # set after the start
    resumed = run_context(None, started.settings())
    model = chat_model_from_context(resumed, 16)
    assert str(model.root_client.base_url).rstrip("/") == OPENAI_API_URL
