"""What a model server does with the requests replan sends: `check_server` (CLI: `replan check`).

A few small requests, each bounded to `CHECK_MAX_TOKENS` tokens and to the context's `timeout`,
probe the server: a plain reply, tool calls with `tool_choice` "auto" (one, then several in one
reply), each way `replan.graphs.model.decision_modes` asks for a decision (built with its
`build_request` and read with the request's own `read`, exactly as runs do), and a streamed
reply. Tool calls written as text are recovered with `replan.graphs.model.text_calls`, as in runs.

The report says what each probe found and the settings a run would use there: the first mode
of `DECISION_MODES` whose requests were honoured (else the first not refused whose calls were
recovered from text), `recover_text_calls`, and the reply limits. A model's answers are
stochastic: "honoured" means the reply held what was asked for, so a server that ignores
`tool_choice` passes when its model calls the tool anyway.

Nothing here prints; `progress` callbacks say which probe runs and what it found.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, cast, get_args

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

from replan.graphs.context import DECISION_MODES, Context, DecisionMode
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.model.client import chat_model_from_context, reply_limit
from replan.graphs.model.decision_modes.fallbacks import refusal_status
from replan.graphs.model.decision_modes.registry import STRATEGIES
from replan.graphs.model.decision_modes.strategy import DecisionTool, ModelMistake, Request
from replan.graphs.model.failures import model_errors
from replan.graphs.model.text_calls import OfferedTools, recover_text_calls
from replan.graphs.model.turn import cut_off
from replan.graphs.plan.decisions import plan_tool, respond_tool
from replan.graphs.prompts import DEFAULT_PROMPTS

# --- `replan check` (replan.cli.server_check): small probes of a model server -------------
# Each probe asks a cooperative model for something it can clearly do in a few tokens.

CHECK_PLAIN = "Reply with the single word OK."
CHECK_TOOL = "Tell the current time in a city."
CHECK_TOOL_CITY = "The name of the city."
CHECK_ONE_CALL = "Call the tool `get_time` with city 'Paris'."
CHECK_TWO_CALLS = (
    "Call the tool `get_time` twice in this one reply: once with city 'Paris' and once with "
    "city 'Tokyo'."
)
CHECK_SYSTEM = "You decide how work on an objective goes on: plan steps, or give the answer."
CHECK_PLAN = (
    "Objective: tell the current time in Paris. Call `plan` with one step: "
    "'Look up the time in Paris'."
)
CHECK_RESPOND = (
    "Objective: name the capital of France. The work is done and the answer is Paris: give "
    "the final answer 'Paris' now (`respond`), no further steps."
)
CHECK_STREAM = "Count from 1 to 20, the numbers separated by spaces, and nothing else."

CHECK_MAX_TOKENS = 128
"""Reply limit of every probe: enough for a short decision or two tool calls."""
CHECK_MAX_RETRIES = 0
"""A probe is asked once: a refusal shows at once, not after the client's retries."""
PROBE_TOOL = "get_time"

Outcome = Literal["honoured", "as_text", "ignored", "refused", "failed", "skipped"]
"""What a probe found: the reply held what was asked for (`as_text`: only once the calls the
model wrote as text were recovered), or a 200 reply without it (`ignored`), an HTTP refusal
(`refused`, a status of `REFUSAL_STATUSES`), another failure, or not asked (`skipped`)."""
WORKING: frozenset[Outcome] = frozenset({"honoured", "as_text"})

ProbeName = Literal[
    "plain", "auto", "several", "named", "required", "decide", "json_schema", "json_object",
    "stream",
]  # fmt: skip
PROBES: tuple[ProbeName, ...] = get_args(ProbeName)
"""The probes in the order they are asked."""
MODE_PROBES: dict[DecisionMode, tuple[ProbeName, ...]] = {
    mode: tuple(cast(ProbeName, name) for name, _ in way.probes) for mode, way in STRATEGIES.items()
}
"""The probes standing for the requests a run sends in each mode (each strategy's `probes`):
the planner's (only `plan` offered) and the replanner's (`plan` and `respond`)."""


@dataclass(frozen=True)
class Probe:
    """The result of one probe request."""

    name: ProbeName
    outcome: Outcome
    status: int | None = None
    """The HTTP status of a refusal or failure."""
    detail: str = ""
    calls: int = 0
    """Tool calls in the reply (recovered ones included)."""
    recovered: int = 0
    """Of them, the calls read from the reply's text."""
    usage: bool | None = None
    """Whether the reply reported its token usage (None: no reply)."""
    cut_off: bool = False
    seconds: float = 0.0


@dataclass(frozen=True)
class Speed:
    """How fast the streamed probe came: seconds to its first token, output tokens a second."""

    first_token_seconds: float
    tokens_per_second: float

    def reply_seconds(self, tokens: int) -> float:
        """About how long a reply of `tokens` tokens takes."""
        return self.first_token_seconds + tokens / self.tokens_per_second


@dataclass(frozen=True)
class Settings:
    """The settings a run would use on the server."""

    decision_mode: DecisionMode | None
    recover_text_calls: bool
    decision_max_tokens: int
    executor_max_tokens: int
    reply_limit_field: str
    """The request field the reply limits go out in."""
    timeout: float | None


@dataclass(frozen=True)
class ServerReport:
    """What `check_server` found, and whether runs can work on the server."""

    base_url: str | None
    model: str
    models: list[str] | None
    """The models GET /models lists (None: it did not answer with a list)."""
    probes: dict[ProbeName, Probe]
    modes: dict[DecisionMode, Outcome]
    settings: Settings
    speed: Speed | None
    usable: bool
    problems: list[str] = field(default_factory=list)
    """Why runs cannot work (empty when usable)."""
    notes: list[str] = field(default_factory=list)
    """What else a run there should know."""

    @property
    def model_listed(self) -> bool | None:
        """Whether /models lists the model (None: no list)."""
        return None if self.models is None else self.model in self.models

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON values."""
        document = asdict(self)
        document["model_listed"] = self.model_listed
        return document


ProbeStarted = Callable[[ProbeName], None]
ProbeDone = Callable[[Probe], None]


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


def _mode_outcome(outcomes: Sequence[Outcome]) -> Outcome:
    """A mode's outcome from those of its requests: the worst of them."""
    for worst in ("refused", "failed", "ignored", "skipped", "as_text"):
        if worst in outcomes:
            return worst
    return "honoured"


def chosen_mode(modes: dict[DecisionMode, Outcome]) -> DecisionMode | None:
    """The first mode of `DECISION_MODES` found honoured, else the first whose calls came as
    text, else the first asked and not refused (None when there is none)."""
    for wanted in (("honoured",), ("as_text",), ("ignored", "failed")):
        for mode in DECISION_MODES:
            if modes[mode] in wanted:
                return mode
    return None


def _limit_field(base_url: str | None) -> str:
    return "max_tokens" if "extra_body" in reply_limit(base_url, 1) else "max_completion_tokens"


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
    return _report(context, models, prober)


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


def _report(context: Context, models: list[str] | None, prober: _Prober) -> ServerReport:
    probes = prober.probes
    modes = {
        mode: _mode_outcome([probes[name].outcome for name in names])
        for mode, names in MODE_PROBES.items()
    }
    mode = chosen_mode(modes)
    recovered = [probe for probe in probes.values() if probe.recovered]
    settings = Settings(
        decision_mode=mode,
        recover_text_calls=True,
        decision_max_tokens=context.decision_max_tokens,
        executor_max_tokens=context.executor_max_tokens,
        reply_limit_field=_limit_field(context.base_url),
        timeout=context.timeout,
    )
    problems: list[str] = []
    plain = probes["plain"]
    if plain.outcome == "failed":
        problems.append(f"a plain chat completion failed: {plain.detail}")
    elif mode is None or modes[mode] not in WORKING:
        shown = ", ".join(f"{name} {outcome}" for name, outcome in modes.items())
        problems.append(f"no way of asking for a decision gave a usable one ({shown})")
    notes = _notes(context, models, probes, recovered, prober.speed)
    return ServerReport(
        base_url=context.base_url,
        model=context.model,
        models=models,
        probes=probes,
        modes=modes,
        settings=settings,
        speed=prober.speed,
        usable=not problems,
        problems=problems,
        notes=notes,
    )


def _notes(
    context: Context,
    models: list[str] | None,
    probes: dict[ProbeName, Probe],
    recovered: list[Probe],
    speed: Speed | None,
) -> list[str]:
    notes: list[str] = []
    if models is not None and context.model not in models:
        listed = ", ".join(models) or "none"
        notes.append(f"the server does not list the model {context.model} (it lists: {listed})")
    if recovered:
        names = ", ".join(probe.name for probe in recovered)
        notes.append(
            f"tool calls written as text were recovered ({names}): keep recover_text_calls on"
        )
    if probes["plain"].usage is False and probes["stream"].usage is False:
        notes.append("the server reports no token usage: runs count their calls, not tokens")
    if probes["auto"].outcome not in WORKING and probes["auto"].outcome != "skipped":
        notes.append("no tool call with tool_choice 'auto': the executor's tools may go unused")
    if cut := [probe.name for probe in probes.values() if probe.cut_off]:
        notes.append(
            f"replies cut off at {CHECK_MAX_TOKENS} tokens ({', '.join(cut)}): the model may "
            "run on; runs correct such decisions, bounded by decision_max_tokens"
        )
    if speed is not None and context.timeout is not None:
        longest = max(context.decision_max_tokens, context.executor_max_tokens)
        needed = speed.reply_seconds(longest)
        if needed > context.timeout:
            notes.append(
                f"at about {speed.tokens_per_second:.1f} tokens/s a reply of {longest} tokens "
                f"takes about {needed:.0f} s, more than the {context.timeout:g} s timeout: give "
                f"--timeout {math.ceil(needed * 1.2)} or lower the reply limits"
            )
    return notes
