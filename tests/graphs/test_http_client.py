"""The HTTP clients under replan's `ChatOpenAI`: replan retries failed model requests (and
reports each retry), and sends tool-call messages with "" content, through public interfaces of
openai and httpx2 only."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx2
import openai
import pytest

from replan.graphs.context import Context
from replan.graphs.model import http_client
from replan.graphs.model.http_client import ModelRetry, model_retries_reported
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Reply, ScriptedOpenAIServer, http_error
from replan.testing import plan_script as script
from tests.conftest import QUICK_CLIENT_RETRY_SECONDS
from tests.support.fake_models import Mode, both_modes, run

OBJECTIVE = "Compare task queues in 2 steps"
CHAT_URL = "http://127.0.0.1:1/v1/chat/completions"


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, **overrides)


def test_openai_sends_through_httpx2() -> None:
    """replan's clients extend openai's and catch httpx2's errors: if openai moves to another
    HTTP library, graphs/model/http_client.py must move with it."""
    assert issubclass(openai.DefaultHttpxClient, httpx2.Client) and issubclass(
        openai.DefaultAsyncHttpxClient, httpx2.AsyncClient
    ), (
        "openai's default HTTP clients are no longer httpx2's: replan's model clients "
        "(graphs/model/http_client.py) subclass them and retry httpx2's errors"
    )


@both_modes
def test_failed_requests_are_retried_by_replan_and_each_retry_is_reported(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    server.push(http_error(500, "warming up", retry_after_ms=5), http_error(429, retry_after_ms=7))
    reported: list[ModelRetry] = []
    with model_retries_reported(reported.append):
        result = run(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            mode,
            context=_context(server),
        )

    assert result["response"].startswith("All 2 steps")
    assert [(r.reason, r.seconds, r.retry, r.retries) for r in reported] == [
        ("HTTP 500", 0.005, 1, 3),
        ("HTTP 429", 0.007, 2, 3),
    ]
    assert all(r.namespace.startswith("planner:") for r in reported)
    planner = [r for r in server.requests if script.classify(r).role == "planner"]
    assert len(planner) == 3  # the OpenAI client itself retries nothing more


@both_modes
def test_a_request_with_no_answer_in_time_is_retried(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    first = True

    def slow_once(request: dict[str, Any]) -> Reply:
        nonlocal first
        if first:
            first = False
            time.sleep(1.0)
        return script.respond(request)

    server.responder = slow_once
    reported: list[ModelRetry] = []
    with model_retries_reported(reported.append):
        context = _context(server, timeout=0.3, max_retries=1)
        result = run(
            build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=context
        )

    assert result["response"].startswith("All 2 steps")
    assert [(r.reason, r.retry, r.retries) for r in reported] == [("no answer in time", 1, 1)]


def test_no_retry_is_reported_outside_model_retries_reported(
    server: ScriptedOpenAIServer,
) -> None:
    reported: list[ModelRetry] = []
    with model_retries_reported(reported.append):
        pass
    server.push(http_error(500, retry_after_ms=1))
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, context=_context(server)
    )
    assert result["response"].startswith("All 2 steps") and reported == []


def _wait(outcome: httpx2.Response | BaseException, retries: int = 3, taken: int = 0) -> Any:
    """What `_Retries` says of `outcome` after `taken` retries of a request."""
    budget = http_client._Retries(retries)
    budget.taken = taken
    return budget.wait_after(outcome)


def _reply(status: int, **headers: str) -> httpx2.Response:
    return httpx2.Response(status, headers={k.replace("_", "-"): v for k, v in headers.items()})


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_the_statuses_the_openai_client_retries_are_retried_with_backoff(status: int) -> None:
    first, third = _wait(_reply(status)), _wait(_reply(status), taken=2)
    assert 0.75 * QUICK_CLIENT_RETRY_SECONDS <= first <= QUICK_CLIENT_RETRY_SECONDS
    assert third == pytest.approx(4 * QUICK_CLIENT_RETRY_SECONDS, rel=0.25)  # the longest


@pytest.mark.parametrize("status", [200, 400, 401, 404, 422])
def test_successes_and_refusals_are_not_retried(status: int) -> None:
    assert _wait(_reply(status)) is None


def test_the_server_says_how_long_to_wait_and_whether_to_retry() -> None:
    assert _wait(_reply(503, retry_after_ms="250")) == 0.25
    assert _wait(_reply(429, retry_after="2")) == 2.0
    in_a_minute = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert _wait(_reply(429, retry_after=in_a_minute)) == pytest.approx(60, abs=2)
    assert _wait(_reply(429, retry_after="121")) is None  # longer than is waited
    assert _wait(_reply(503, x_should_retry="false")) is None
    assert _wait(_reply(400, x_should_retry="true")) is not None


def test_failures_to_get_a_reply_are_retried_and_the_budget_runs_out() -> None:
    request = httpx2.Request("POST", CHAT_URL)
    reported: list[ModelRetry] = []
    with model_retries_reported(reported.append):
        assert _wait(httpx2.ReadTimeout("slow", request=request)) is not None
        assert _wait(httpx2.ConnectError("refused", request=request), taken=2) is not None
        assert _wait(_reply(500), taken=3) is None
    assert [(r.reason, r.retry, r.retries) for r in reported] == [
        ("no answer in time", 1, 3),
        ("connection failed (ConnectError)", 3, 3),
    ]


def test_only_null_assistant_content_of_chat_completion_requests_is_rewritten() -> None:
    messages = [
        {"role": "user", "content": None},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "assistant", "content": "text"},
    ]
    request = httpx2.Request("POST", CHAT_URL, json={"model": "m", "messages": messages})
    sent = http_client._with_empty_assistant_content(request)
    body = json.loads(sent.content)
    assert [m["content"] for m in body["messages"]] == [None, "", "text"]
    assert sent.headers["content-length"] == str(len(sent.content))
    assert sent.url == request.url and sent.headers["content-type"] == "application/json"

    models = httpx2.Request("POST", "http://127.0.0.1:1/v1/models", json={"messages": messages})
    plain = httpx2.Request("POST", CHAT_URL, json={"messages": messages[2:]})
    for unchanged in (models, plain):
        assert http_client._with_empty_assistant_content(unchanged) is unchanged
