"""What a model server does with the requests replan sends: `check_server` (CLI: `replan check`).

A few small requests, each bounded to `CHECK_MAX_TOKENS` tokens and to the context's `timeout`,
probe the server: a plain reply, tool calls with `tool_choice` "auto" (one, then several in one
reply), each way `replan.graphs.model.decision_modes` asks for a decision (built with its
strategy's `request` and read with the request's own `read`, exactly as runs do), and a streamed
reply. Tool calls written as text are recovered with `replan.graphs.model.text_calls`, as in runs.

The report (`replan.cli.server_verdict`) says what each probe found and the settings a run
would use there: the first mode of `DECISION_MODES` whose requests were honoured (else the
first not refused whose calls were recovered from text), `recover_text_calls`, and the reply
limits. A model's answers are stochastic: "honoured" means the reply held what was asked for,
so a server that ignores `tool_choice` passes when its model calls the tool anyway. The
probes' texts and the report's types are in `replan.cli.probes`.

Nothing here prints; `progress` callbacks say which probe runs and what it found.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, cast

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI

from replan.cli.probes import (
    CHECK_MAX_RETRIES,
    CHECK_MAX_TOKENS,
    CHECK_ONE_CALL,
    CHECK_PLAIN,
    CHECK_PLAN,
    CHECK_RESPOND,
    CHECK_STREAM,
    CHECK_SYSTEM,
    CHECK_TOOL,
    CHECK_TOOL_CITY,
    CHECK_TWO_CALLS,
    PROBE_TOOL,
    PROBES,
    Outcome,
    Probe,
    ProbeDone,
    ProbeName,
    ProbeStarted,
    ServerReport,
    Speed,
)
from replan.cli.server_verdict import server_report
from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.model.client import chat_model_from_context
from replan.graphs.model.decision_modes.fallbacks import refusal_status
from replan.graphs.model.decision_modes.registry import STRATEGIES
from replan.graphs.model.decision_modes.strategy import DecisionTool, ModelMistake, Request
from replan.graphs.model.failures import model_errors
from replan.graphs.model.text_calls import OfferedTools, recover_text_calls
from replan.graphs.model.turn import cut_off
from replan.graphs.plan.decisions import plan_tool, respond_tool
from replan.graphs.prompts import DEFAULT_PROMPTS


def _probe_tool() -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": CHECK_TOOL_CITY}},
        "required": ["city"],
    }
    function = {"name": PROBE_TOOL, "description": CHECK_TOOL, "parameters": parameters}
    return {"type": "function", "function": function}


class _Prober:
    """Asks the probes of one check, in order, and keeps their results."""

    def __init__(
        self, model: ChatOpenAI, started: ProbeStarted | None, done: ProbeDone | None
    ) -> None:
        self.model = model
        self.started = started or (lambda _: None)
        self.done = done or (lambda _: None)
        self.probes: dict[ProbeName, Probe] = {}
        self.errors: dict[ProbeName, ModelUnavailableError] = {}
        self.speed: Speed | None = None

    def ask(
        self,
        name: ProbeName,
        model: Runnable[LanguageModelInput, BaseMessage],
        messages: Sequence[BaseMessage],
        offered: OfferedTools | None,
        judge: Callable[[AIMessage], tuple[Outcome, str]],
    ) -> Probe:
        """Send one probe request and judge its reply (calls written as text recovered)."""
        self.started(name)
        start = time.monotonic()
        try:
            with model_errors():
                reply = model.invoke(list(messages))
        except ModelUnavailableError as exc:
            self.errors[name] = exc
            return self._record(_failure(name, exc, time.monotonic() - start))
        seconds = time.monotonic() - start
        assert isinstance(reply, AIMessage)
        recovered = 0
        if offered is not None and (found := recover_text_calls(reply, offered)) is not None:
            reply, recovered = found, len(found.tool_calls)
        outcome, detail = judge(reply)
        if outcome == "honoured" and recovered:
            outcome = "as_text"
        return self._record(
            Probe(
                name,
                outcome,
                detail=detail,
                calls=len(reply.tool_calls),
                recovered=recovered,
                usage=reply.usage_metadata is not None,
                cut_off=cut_off(reply),
                seconds=seconds,
            )
        )

    def stream(self, messages: Sequence[BaseMessage]) -> Probe:
        """A streamed reply: it works when chunks come and end; how fast they come."""
        self.started("stream")
        start = time.monotonic()
        first = last = start
        chunks = 0
        reply: AIMessageChunk | None = None
        try:
            with model_errors():
                for chunk in self.model.stream(list(messages)):
                    assert isinstance(chunk, AIMessageChunk)
                    if chunk.text:
                        first = first if chunks else time.monotonic()
                        last = time.monotonic()
                        chunks += 1
                    reply = chunk if reply is None else reply + chunk
        except ModelUnavailableError as exc:
            self.errors["stream"] = exc
            return self._record(_failure("stream", exc, time.monotonic() - start))
        seconds = time.monotonic() - start
        if reply is None or not reply.text.strip():
            return self._record(
                Probe("stream", "ignored", detail="no text streamed", seconds=seconds)
            )
        usage = reply.usage_metadata
        written = usage["output_tokens"] if usage else chunks
        if chunks > 1 and last > first:  # the tokens after the first, over the time they took
            self.speed = Speed(first - start, (written - 1) / (last - first))
        return self._record(
            Probe(
                "stream",
                "honoured",
                detail=f"{chunks} chunks",
                usage=usage is not None,
                cut_off=cut_off(reply),
                seconds=seconds,
            )
        )

    def skip(self, name: ProbeName, why: str) -> None:
        self.probes[name] = Probe(name, "skipped", detail=why)

    def _record(self, probe: Probe) -> Probe:
        self.probes[probe.name] = probe
        self.done(probe)
        return probe


def _failure(name: ProbeName, error: ModelUnavailableError, seconds: float) -> Probe:
    """A refusal (only of what a request carries beyond the plain one), or a failure."""
    status = refusal_status(error)
    cause = error.__cause__
    if status is not None and name != "plain":
        return Probe(name, "refused", status, str(error), seconds=seconds)
    code = cause.status_code if isinstance(cause, openai.APIStatusError) else None
    return Probe(name, "failed", code, str(error), seconds=seconds)


def _calls_judge(wanted: int) -> Callable[[AIMessage], tuple[Outcome, str]]:
    """Honoured when the reply holds at least `wanted` calls of the probe tool."""

    def judge(reply: AIMessage) -> tuple[Outcome, str]:
        names = [call["name"] for call in reply.tool_calls]
        if len(names) >= wanted and set(names) == {PROBE_TOOL}:
            return "honoured", f"{len(names)} call{'s' * (len(names) != 1)}"
        return "ignored", _what_came(reply)

    return judge


def _decision_judge(request: Request) -> Callable[[AIMessage], tuple[Outcome, str]]:
    """Honoured when the reply holds a decision the run would take."""

    def judge(reply: AIMessage) -> tuple[Outcome, str]:
        try:
            decision = request.read(reply)
        except ModelMistake as exc:
            return "ignored", f"{exc.problem}: {exc.sent}"
        name = next(tool.name for tool in request.tools if isinstance(decision, tool.args))
        return "honoured", f"{name} {decision.model_dump_json()}"

    return judge


def _what_came(reply: AIMessage) -> str:
    calls = ", ".join(call["name"] for call in reply.tool_calls)
    if calls:
        return f"called {calls}"
    text = " ".join(reply.text.split())
    return f"text: {text[:80]}" if text else "an empty reply"


def _models(model: ChatOpenAI) -> list[str] | None:
    """The ids GET /models lists; None when it does not answer with a list. A server that
    cannot be reached is left to the first chat request to say; a refused key is an error."""
    try:
        return [item.id for item in model.root_client.models.list()]
    except openai.AuthenticationError as exc:
        raise ModelUnavailableError(f"the model server refused the API key: {exc}") from exc
    except (openai.APIError, ValueError, TypeError):
        return None


def check_server(
    context: Context, started: ProbeStarted | None = None, done: ProbeDone | None = None
) -> ServerReport:
    """Probe the server `context` names (its `model`, `base_url`, `timeout`) and report.

    Raises `ModelUnavailableError` when no API key is set, the server cannot be reached or
    refuses the key, or the first request gets no reply in time.
    """
    context = replace(context, max_retries=CHECK_MAX_RETRIES)
    model = chat_model_from_context(context, CHECK_MAX_TOKENS)
    assert isinstance(model, ChatOpenAI)
    models = _models(model)
    prober = _Prober(model, started, done)
    plain = _ask_plain(prober)
    if plain.outcome == "failed":
        for name in PROBES[1:]:
            prober.skip(name, "the plain request failed")
    else:
        _ask_tools(prober)
        _ask_decisions(prober, model)
        prober.stream([HumanMessage(CHECK_STREAM)])
    return server_report(context, models, prober.probes, prober.speed)


def _ask_plain(prober: _Prober) -> Probe:
    """The plain request; its error goes up when the server is out of reach, refuses the key
    or sends no reply in time (a timeout is a kind of connection error)."""
    plain = prober.ask("plain", prober.model, [HumanMessage(CHECK_PLAIN)], None, _plain)
    error = prober.errors.get("plain")
    if error is not None and isinstance(
        error.__cause__, openai.APIConnectionError | openai.AuthenticationError
    ):
        raise error
    return plain


def _plain(reply: AIMessage) -> tuple[Outcome, str]:
    text = " ".join(reply.text.split())
    return ("honoured", f"text: {text[:80]}") if text else ("ignored", "an empty reply")


def _ask_tools(prober: _Prober) -> None:
    tool = prober.model.bind_tools([_probe_tool()])
    offered = OfferedTools.of([PROBE_TOOL])
    prober.ask("auto", tool, [HumanMessage(CHECK_ONE_CALL)], offered, _calls_judge(1))
    messages = [HumanMessage(CHECK_TWO_CALLS)]
    prober.ask("several", tool, messages, offered, _calls_judge(2))


def _ask_decisions(prober: _Prober, model: BaseChatModel) -> None:
    plan, respond = plan_tool(DEFAULT_PROMPTS), respond_tool(DEFAULT_PROMPTS)
    asked: dict[int, tuple[list[BaseMessage], list[DecisionTool]]] = {
        1: ([SystemMessage(CHECK_SYSTEM), HumanMessage(CHECK_PLAN)], [plan]),
        2: ([SystemMessage(CHECK_SYSTEM), HumanMessage(CHECK_RESPOND)], [plan, respond]),
    }
    for way in STRATEGIES.values():
        for name, decisions in way.probes:
            if name in prober.probes:
                continue  # a request two modes send alike (one decision: a named choice)
            messages, tools = asked[decisions]
            request = way.request(model, messages, tools, DEFAULT_PROMPTS)
            prober.ask(
                cast(ProbeName, name),
                request.model,
                request.messages,
                request.offered,
                _decision_judge(request),
            )
