"""`replan check` against scripted servers imitating real ones: the rows of its table, the
settings it suggests, its exit codes and its JSON; and a run with the suggested settings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from replan.cli.check import LABELS
from replan.cli.output import ExitCode
from replan.cli.probes import CHECK_MAX_TOKENS, PROBES, ServerReport
from replan.cli.server_check import check_server
from replan.cli.server_verdict import chosen_mode
from replan.graphs.context import Context
from replan.testing import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    MODEL_ID,
    OLLAMA,
    Quirks,
    Reply,
    ScriptedOpenAIServer,
    cooperative,
    http_error,
    text,
)
from tests.support.cli_harness import PLANNED, Outcome, invoke, run_cli

DEFAULT = Quirks()
NO_USAGE = Quirks(usage=False)
TAGGED = Quirks(calls_as_text="tagged")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """An API key and the scripted server's model name; the working folder is empty."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("REPLAN_MODEL", MODEL_ID)
    yield monkeypatch


def _check(capsys: pytest.CaptureFixture[str], server: ScriptedOpenAIServer, *args: str) -> Outcome:
    return invoke(capsys, "check", "--base-url", server.base_url, *args)


def _rows(out: str) -> dict[str, str]:
    """The table's rows: label → value."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("  ") and "  " in line.strip():
            label, value = line.strip().split("  ", 1)
            rows[label] = value.strip()
    return rows


EXPECTED: dict[str, tuple[Quirks, dict[str, str], str]] = {
    "openai-like": (
        DEFAULT,
        {
            "tool_choice_required": "honoured",
            "named_plan": "honoured",
            "named_decide": "honoured",
            "json_schema": "honoured",
            "json_object": "honoured",
            "text": "no",
        },
        "tool_required",
    ),
    "llama-cpp-python": (
        LLAMA_CPP_PYTHON,
        {
            "tool_choice_required": "refused",
            "named_plan": "honoured",
            "named_decide": "honoured",
            "json_schema": "refused",
            "json_object": "honoured",
            "text": "no",
        },
        "tool_named",
    ),
    "llama.cpp": (
        LLAMA_CPP,
        {
            "tool_choice_required": "honoured, call written as text",
            "named_plan": "honoured, call written as text",
            "named_decide": "ignored",
            "json_schema": "honoured",
            "json_object": "honoured",
            "text": "yes (auto, several, named, required)",
        },
        "json_schema",
    ),
    "ollama": (
        OLLAMA,
        {
            "tool_choice_required": "honoured",
            "named_plan": "honoured",
            "named_decide": "ignored",
            "json_schema": "honoured",
            "json_object": "honoured",
            "text": "no",
        },
        "tool_required",
    ),
    "no usage": (
        NO_USAGE,
        {
            "tool_choice_required": "honoured",
            "named_plan": "honoured",
            "named_decide": "honoured",
            "json_schema": "honoured",
            "json_object": "honoured",
            "text": "no",
        },
        "tool_required",
    ),
}


@pytest.mark.parametrize("preset", list(EXPECTED))
def test_the_table_shows_what_each_server_does_and_the_mode_to_use(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], preset: str
) -> None:
    quirks, expected, mode = EXPECTED[preset]
    with ScriptedOpenAIServer(cooperative.respond, quirks=quirks) as server:
        outcome = _check(capsys, server)
        requests = server.requests

    assert outcome.code == ExitCode.OK, outcome.err
    rows = _rows(outcome.out)
    shown = {
        "tool_choice_required": rows[LABELS["required"]],
        "named_plan": rows[LABELS["named"]],
        "named_decide": rows[LABELS["decide"]],
        "json_schema": rows[LABELS["json_schema"]],
        "json_object": rows[LABELS["json_object"]],
        "text": rows["tool calls written as text"],
    }
    words = {key: value if key == "text" else value.split(" (")[0] for key, value in shown.items()}
    assert words == expected
    assert rows["reachable"] == "yes"
    assert rows["model listed"] == f"yes (GET /models lists: {MODEL_ID})"
    assert rows[LABELS["plain"]] == "yes (text: OK)"
    assert rows[LABELS["auto"]].startswith(("yes (1 call)", "yes, written as text (1 call)"))
    assert rows[LABELS["several"]].startswith(("yes (2 calls)", "yes, written as text (2 calls)"))
    assert rows[LABELS["stream"]] == "yes (20 chunks)"
    usage = "no (plain), no (streamed)" if quirks is NO_USAGE else "yes (plain), yes (streamed)"
    assert rows["usage reported"] == usage
    assert rows["decision_mode"].split(" (")[0] == mode
    assert rows["recover_text_calls"] == "true"
    assert rows["reply limits"] == (
        "decision_max_tokens 1024, executor_max_tokens 2048, sent as max_tokens; timeout 120 s"
    )
    assert "Usable: runs can work on this server with these settings." in outcome.out
    # Each probe is one bounded request (no retries), and progress says each one on stderr.
    assert len(requests) == len(PROBES)
    assert {request.get("max_tokens") for request in requests} == {CHECK_MAX_TOKENS}
    assert [line for line in outcome.err.splitlines() if line.startswith("Probing")] == [
        f"Probing {LABELS[name]} …" for name in PROBES
    ]


def test_the_decision_probes_are_the_requests_runs_send(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(cooperative.respond) as server:
        assert _check(capsys, server).code == ExitCode.OK
        requests: dict[str, dict[str, Any]] = dict(zip(PROBES, server.requests, strict=True))

    def tools(name: str) -> list[str]:
        return [tool["function"]["name"] for tool in requests[name].get("tools") or []]

    assert (tools("named"), requests["named"]["tool_choice"]["function"]["name"]) == (
        ["plan"],
        "plan",
    )
    assert (tools("required"), requests["required"]["tool_choice"]) == (
        ["plan", "respond"],
        "required",
    )
    assert (tools("decide"), requests["decide"]["tool_choice"]["function"]["name"]) == (
        ["decide"],
        "decide",
    )
    assert requests["json_schema"]["response_format"]["type"] == "json_schema"
    assert set(requests["json_object"]["response_format"]) == {"type", "schema"}
    assert (tools("auto"), "tool_choice" in requests["auto"]) == (["get_time"], False)
    assert requests["stream"]["stream"] is True
    assert requests["stream"]["stream_options"] == {"include_usage": True}


def test_calls_written_in_tags_are_recovered(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(cooperative.respond, quirks=TAGGED) as server:
        outcome = _check(capsys, server)
    rows = _rows(outcome.out)
    assert outcome.code == ExitCode.OK
    assert rows[LABELS["several"]] == "yes, written as text (2 calls)"
    assert rows["decision_mode"].startswith("json_schema (tool_required as_text, tool_named")
    assert "keep recover_text_calls on" in outcome.out


def test_json_is_one_document_with_the_report(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(cooperative.respond, quirks=LLAMA_CPP_PYTHON) as server:
        outcome = _check(capsys, server, "--json", "--quiet")
    document: dict[str, Any] = json.loads(outcome.out)

    assert (outcome.code, outcome.err) == (ExitCode.OK, "")
    assert set(document) == {
        "base_url", "model", "models", "model_listed", "probes", "modes", "settings", "speed",
        "usable", "problems", "notes",
    }  # fmt: skip
    assert (document["model"], document["models"], document["model_listed"]) == (
        MODEL_ID,
        [MODEL_ID],
        True,
    )
    assert list(document["probes"]) == list(PROBES)
    assert document["probes"]["required"]["outcome"] == "refused"
    assert document["probes"]["required"]["status"] == 500
    assert document["probes"]["several"]["calls"] == 2
    assert document["modes"] == {
        "tool_required": "refused",
        "tool_named": "honoured",
        "json_schema": "refused",
        "json_object": "honoured",
    }
    assert document["settings"] == {
        "decision_mode": "tool_named",
        "recover_text_calls": True,
        "decision_max_tokens": 1024,
        "executor_max_tokens": 2048,
        "reply_limit_field": "max_tokens",
        "timeout": 120.0,
    }
    assert document["speed"]["tokens_per_second"] > 0
    assert (document["usable"], document["problems"]) == (True, [])


def test_a_server_failing_every_request_is_not_usable(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(lambda _: http_error(500, "out of memory")) as server:
        outcome = _check(capsys, server)
        asked = len(server.requests)

    assert outcome.code == ExitCode.FAILED
    rows = _rows(outcome.out)
    assert rows[LABELS["plain"]] == "failed (the model server answered HTTP 500: out of memory)"
    assert {rows[LABELS[name]] for name in PROBES[1:]} == {"not asked (the plain request failed)"}
    assert rows["decision_mode"].startswith("none (")
    assert asked == 1
    problem = "a plain chat completion failed: the model server answered HTTP 500: out of memory"
    assert f"Not usable: {problem}" in outcome.out
    assert outcome.err.splitlines()[-1] == f"replan check: not usable: {problem}"


def test_a_model_that_never_decides_is_not_usable(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(lambda _: text("I would rather chat.")) as server:
        outcome = _check(capsys, server)

    rows = _rows(outcome.out)
    assert outcome.code == ExitCode.FAILED
    assert rows[LABELS["auto"]] == "no (text: I would rather chat.)"
    assert rows[LABELS["required"]].startswith("ignored (no tool call: ")
    assert rows[LABELS["json_schema"]].startswith("ignored (the reply is not a JSON object")
    assert rows["decision_mode"].startswith("tool_required (tool_required ignored, ")
    assert "Not usable: no way of asking for a decision gave a usable one" in outcome.out
    assert "the executor's tools may go unused" in outcome.out


def test_a_server_that_is_down_is_unreachable(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer() as server:
        url = server.base_url
    outcome = invoke(capsys, "check", "--base-url", url, "--quiet")
    assert (outcome.code, outcome.out) == (ExitCode.MODEL_UNAVAILABLE, "")
    assert outcome.err == f"replan: cannot reach the model server at {url}: Connection error.\n"


def test_a_server_too_slow_for_the_timeout_is_unavailable(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def slow(request: dict[str, Any]) -> Reply:
        time.sleep(2)
        return text("OK")

    with ScriptedOpenAIServer(slow) as server:
        outcome = _check(capsys, server, "--timeout", "0.3", "--quiet")
    assert (outcome.code, outcome.out) == (ExitCode.MODEL_UNAVAILABLE, "")
    assert outcome.err == f"replan: model: no reply within 0.3 s from {server.base_url}\n"


def test_bad_input_is_one_line_with_its_exit_code(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(cooperative.respond) as server:
        env.delenv("OPENAI_API_KEY")
        no_key = _check(capsys, server)
        asked = len(server.requests)
    assert (no_key.code, no_key.out, asked) == (ExitCode.MODEL_UNAVAILABLE, "", 0)
    assert no_key.err.startswith("replan: OPENAI_API_KEY is not set: export it")
    assert no_key.err.count("\n") == 1
    for args in (["--base-url", "localhost:8080"], ["--timeout", "0"], ["--db", "x"]):
        with pytest.raises(SystemExit) as exited:
            invoke(capsys, "check", *args)
        assert exited.value.code == ExitCode.USAGE
        assert capsys.readouterr().err.count("\n") == 1


def test_the_model_not_listed_is_a_note(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(cooperative.respond) as server:
        outcome = _check(capsys, server, "--model", "qwen")
    assert outcome.code == ExitCode.OK
    assert _rows(outcome.out)["model listed"] == f"no (GET /models lists: {MODEL_ID})"
    assert f"the server does not list the model qwen (it lists: {MODEL_ID})" in outcome.out


def test_reply_limits_too_long_for_the_timeout_are_a_note(env: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAIServer(cooperative.respond) as server:
        context = Context(base_url=server.base_url, timeout=1.0, executor_max_tokens=10**6)
        report = check_server(context)
    assert report.usable
    assert report.speed is not None
    [note] = [note for note in report.notes if "timeout" in note]
    assert "a reply of 1000000 tokens takes about" in note
    assert "more than the 1 s timeout: give --timeout " in note


def test_the_first_honoured_mode_is_chosen_else_one_written_as_text() -> None:
    modes: dict[Any, Any] = {
        "tool_required": "refused",
        "tool_named": "as_text",
        "json_schema": "ignored",
        "json_object": "honoured",
    }
    assert chosen_mode(modes) == "json_object"
    assert chosen_mode({**modes, "json_object": "refused"}) == "tool_named"
    assert chosen_mode({**modes, "tool_named": "failed", "json_object": "refused"}) == (
        "tool_named"
    )
    assert chosen_mode(dict.fromkeys(modes, "refused")) is None
    assert chosen_mode(dict.fromkeys(modes, "skipped")) is None


SERVERS: dict[str | None, tuple[dict[str, str], str]] = {
    None: (dict.fromkeys(["tool_required", "tool_named", "json_schema", "json_object"],
                         "honoured"), "tool_required"),
    "llama-server": ({"tool_required": "as_text", "tool_named": "ignored",
                      "json_schema": "honoured", "json_object": "honoured"}, "json_schema"),
    "llama-cpp-python": ({"tool_required": "refused", "tool_named": "honoured",
                          "json_schema": "refused", "json_object": "honoured"}, "tool_named"),
    "ollama": ({"tool_required": "honoured", "tool_named": "ignored",
                "json_schema": "honoured", "json_object": "honoured"}, "tool_required"),
}  # fmt: skip
"""What `replan check` found on each real server (docs/benchmarks.md, DESIGN.md), and the
decision mode it suggests there; None: an OpenAI-like server."""


@contextmanager
def served(*args: str) -> Iterator[str]:
    """`python -m replan.testing ARGS` in its own process; yields the base URL it says."""
    command = [sys.executable, "-m", "replan.testing", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        said = process.stdout.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", said)
        assert match, said
        yield match[1]
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0


@pytest.mark.slow
@pytest.mark.parametrize("preset", list(SERVERS), ids=lambda preset: preset or "openai-like")
def test_check_and_a_run_on_the_scripted_server_of_each_preset(
    tmp_path: Path, preset: str | None
) -> None:
    modes, suggested = SERVERS[preset]
    with served(*(["--preset", preset] if preset else [])) as url:
        server = ["--base-url", url, "--model", MODEL_ID]
        checked = run_cli(None, tmp_path, "check", *server, "--json", "--quiet")
        report = json.loads(checked.out)
        mode = report["settings"]["decision_mode"]
        ran = run_cli(
            None,
            tmp_path,
            "run",
            *PLANNED,
            "Ship it in 2 steps",
            *server,
            "--decision-mode",
            mode,
        )

    assert checked.code == ExitCode.OK, checked.err
    assert (report["usable"], report["modes"], mode) == (True, modes, suggested)
    assert ran.code == ExitCode.OK, ran.err
    assert "All 2 steps of [ship it in 2 steps] are done" in ran.out
    assert "refused" not in ran.err


def test_the_report_type_is_what_the_module_returns(env: pytest.MonkeyPatch) -> None:
    with ScriptedOpenAIServer(cooperative.respond, quirks=OLLAMA) as server:
        report = check_server(Context(base_url=server.base_url))
    assert isinstance(report, ServerReport)
    assert report.modes["tool_named"] == "ignored"
    assert report.probes["decide"].detail.startswith("unexpected tool call `respond`")
    assert report.settings.decision_mode == "tool_required"
