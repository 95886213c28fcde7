"""ChatOpenAI works through the scripted server, and the plan–execute responder is coherent."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.testing import (
    BROKEN_REPLIES,
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    OLLAMA,
    PRESETS,
    ScriptedOpenAIServer,
    cooperative,
    http_error,
    text,
    tokens,
)
from replan.testing import plan_script as script
from replan.testing.command import build_parser
from replan.testing.replies import (
    prompt_tokens,
    tool_call,
    tool_calls,
)

REPO = Path(__file__).resolve().parents[1]


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


@tool
def get_time(zone: str) -> str:
    """Time in a zone."""
    return f"noon in {zone}"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def chat(srv: ScriptedOpenAIServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="scripted-model", base_url=srv.base_url, api_key=SecretStr("test"), **kwargs
    )


def test_plain_text(server: ScriptedOpenAIServer) -> None:
    server.push(text("hello there"))
    reply = chat(server).invoke("hi")
    assert reply.content == "hello there"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_forced_tool_call_records_tool_choice(server: ScriptedOpenAIServer) -> None:
    server.push(tool_call("get_weather", {"city": "Lima"}))
    model = chat(server).bind_tools([get_weather, get_time], tool_choice="get_weather")
    reply = model.invoke("weather?")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("get_weather", {"city": "Lima"})]
    sent = server.requests[0]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "get_time"]


def test_streaming_text_arrives_in_several_chunks_with_usage(server: ScriptedOpenAIServer) -> None:
    server.push(text("one two three four"))
    chunks = list(chat(server, stream_usage=True).stream("count"))
    assert len([c for c in chunks if c.content]) == 4
    total = sum(chunks[1:], chunks[0])
    assert total.content == "one two three four"
    expected = len(prompt_tokens(server.requests[0])) + tokens("one two three four")
    assert total.usage_metadata is not None and total.usage_metadata["total_tokens"] == expected
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


def test_streaming_parallel_tool_calls_reassemble(server: ScriptedOpenAIServer) -> None:
    server.push(tool_calls([("get_weather", {"city": "Lima"}), ("get_time", {"zone": "UTC"})]))
    model = chat(server, streaming=True).bind_tools([get_weather, get_time])
    chunks = list(model.stream("both"))
    assert len(chunks) > 4
    total = sum(chunks[1:], chunks[0])
    assert isinstance(total, AIMessageChunk)
    assert [(c["name"], c["args"]) for c in total.tool_calls] == [
        ("get_weather", {"city": "Lima"}),
        ("get_time", {"zone": "UTC"}),
    ]
    assert len({c["id"] for c in total.tool_calls}) == 2


def test_parallel_tool_calls_non_streaming(server: ScriptedOpenAIServer) -> None:
    server.push(tool_calls([("get_weather", {"city": "A"}), ("get_weather", {"city": "B"})]))
    reply = chat(server).bind_tools([get_weather]).invoke("two cities")
    assert [c["args"]["city"] for c in reply.tool_calls] == ["A", "B"]


def test_malformed_arguments_become_invalid_tool_calls(server: ScriptedOpenAIServer) -> None:
    server.push(tool_call("get_weather", '{"city": "Lima"'))
    reply = chat(server).bind_tools([get_weather]).invoke("weather?")
    assert reply.tool_calls == []
    assert reply.invalid_tool_calls[0]["name"] == "get_weather"
    assert reply.invalid_tool_calls[0]["args"] == '{"city": "Lima"'


def test_http_error_surfaces_status_and_message(server: ScriptedOpenAIServer) -> None:
    server.push(http_error(429, "slow down"))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        chat(server, max_retries=0).invoke("hi")


def test_empty_script_fails_loudly(server: ScriptedOpenAIServer) -> None:
    with pytest.raises(openai.InternalServerError, match="script ran out"):
        chat(server, max_retries=0).invoke("hi")


def test_responder_answers_when_queue_is_empty() -> None:
    seen: list[str] = []

    def echo(request: dict[str, Any]) -> Any:
        seen.append(request["messages"][-1]["content"])
        return text(f"echo {seen[-1]}")

    with ScriptedOpenAIServer(echo) as srv:
        srv.push(text("queued first"))
        model = chat(srv)
        assert [model.invoke(q).content for q in ("a", "b")] == ["queued first", "echo b"]
    assert seen == ["b"]


def test_models_endpoint_and_unknown_route(server: ScriptedOpenAIServer) -> None:
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
        assert json.load(response)["data"][0]["id"] == "scripted-model"
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"{server.base_url}/nowhere", timeout=5)
    assert error.value.code == 404


@pytest.mark.slow
def test_runs_as_a_separate_process(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    command = [sys.executable, "-m", "replan.testing", "--port-file", str(port_file)]
    command += ["--responder", "replan.testing.plan_script:respond"]
    process = subprocess.Popen(command, cwd=REPO)
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        model = ChatOpenAI(
            model="m",
            base_url=f"http://127.0.0.1:{port_file.read_text()}/v1",
            api_key=SecretStr("test"),
        )
        assert model.invoke("no step here").content == f"{script.DIRECT_ANSWER} no step here"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_the_command_takes_a_preset_by_the_server_s_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert PRESETS == {"llama-server": LLAMA_CPP, "llama-cpp-python": LLAMA_CPP_PYTHON,
                       "ollama": OLLAMA}  # fmt: skip
    args = build_parser().parse_args(["--preset", "llama-cpp-python"])
    assert (args.preset, args.responder, args.port_file) == (
        "llama-cpp-python",
        cooperative.respond,
        None,
    )
    for wrong in (["--preset", "vllm"], ["--responder", "replan.testing:nothing"]):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(wrong)
        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].startswith("python -m replan.testing: ")


def test_the_cooperative_model_plays_runs_as_the_scripted_model() -> None:
    with ScriptedOpenAIServer(cooperative.respond, quirks=PRESETS["ollama"]) as srv:
        model = chat(srv)
        assert model.invoke("Reply with the single word OK.").content == "OK"
        assert model.invoke("no step here").content == f"{script.DIRECT_ANSWER} no step here"


# --- the plan–execute responder ---------------------------------------------------------

PLAN_TOOL = {
    "type": "function",
    "function": {"name": "plan", "parameters": {"properties": {"steps": {"type": "array"}}}},
}
RESPOND_TOOL = {
    "type": "function",
    "function": {"name": "respond", "parameters": {"properties": {"answer": {"type": "string"}}}},
}
TASK_TOOL = {"type": "function", "function": {"name": "TaskCreate", "parameters": {}}}


def _arguments(reply: Any) -> tuple[str, dict[str, Any]]:
    (call,) = reply.calls
    return call.name, json.loads(call.arguments)


def test_plan_execute_responder_plays_a_whole_run() -> None:
    objective = "Compare three queues, in 2 steps!"
    planner = {
        "messages": [{"role": "system", "content": "plan"}, {"role": "user", "content": objective}],
        "tools": [PLAN_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "plan"}},
    }
    name, args = _arguments(script.respond(planner))
    assert name == "plan"
    assert args["steps"] == [
        "Step 1 of 2 [compare three queues in 2]",
        "Step 2 of 2 [compare three queues in 2]",
    ]
    done: list[str] = []
    for plan in (args["steps"], args["steps"][1:]):
        prompt = f"Plan: {plan}\nDone: {done}\nDo the first step: {plan[0]}"
        executor = {"messages": [{"role": "user", "content": prompt}], "tools": [TASK_TOOL]}
        assert script.classify(executor) == script.Call("executor", 3 - len(plan))
        done.append(str(script.respond(executor).content))
        replanner = {
            "messages": [{"role": "user", "content": f"Plan: {args['steps']}\nDone: {done}"}],
            "tools": [PLAN_TOOL, RESPOND_TOOL],
        }
        assert script.classify(replanner).role == "replanner"
        name, reply = _arguments(script.respond(replanner))
        if len(done) == 1:
            assert (name, reply) == ("plan", {"steps": args["steps"][1:]})
    assert name == "respond"
    assert "RESULT 1/2" in reply["answer"] and "RESULT 2/2" in reply["answer"]
    assert script.executor_steps([planner, executor, replanner]) == [2]


@pytest.mark.parametrize("stream", [False, True])
def test_broken_replies_are_sent_verbatim(server: ScriptedOpenAIServer, stream: bool) -> None:
    for reply in BROKEN_REPLIES.values():
        server.push(reply)
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps({"model": "m", "messages": [], "stream": stream}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"] == reply.content_type
            assert answer.read().decode() == reply.body


@pytest.mark.parametrize("stream", [False, True])
def test_scripted_call_ids_may_repeat_be_empty_or_be_left_out(
    server: ScriptedOpenAIServer, stream: bool
) -> None:
    calls = [("get_weather", {"city": "Lima"})] * 3
    server.push(tool_calls(calls, ids=["same", "", None]))
    reply = chat(server, streaming=stream).bind_tools([get_weather]).invoke("weather?")
    assert [c["id"] for c in reply.tool_calls] == ["same", "", None]
