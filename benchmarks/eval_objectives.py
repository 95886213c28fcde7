"""Objectives with checked answers: replan next to LangGraph's tutorial design on one server.

Runs the suite of `benchmarks/objectives.py` (each objective with deterministic local tools, or
none for a writing objective, and an answer checked by code) with these designs on the same
OpenAI-compatible server: replan with default settings (tool steps offered), replan with
`replan="when_needed"`, replan with `tool_steps="off"` (every step through an executor model
loop), the tutorial's plan-and-execute design (`benchmarks/tutorial.py`), and `plain`: the
objective as one request to the model, no agent and no tools (it can answer only what needs no
tool). Every design gets the same tools, the task tools in the same detail for an objective
about a task list (none for the others, replan's default), the same per-request timeout,
retries, reply-token bounds (decisions and executor turns), rounds, executor steps and run
timeout.

For every run it prints whether the answer was right, model calls, tool calls (every tool run,
task tools too), input/output tokens as the server reported them (LangChain's
`UsageMetadataCallbackHandler`, the same for both designs; "unknown" when the server reports
none), the most plan steps run in one wave, the corrected mistakes, recovered text tool calls
and fallbacks replan's final state counts ("-" for the tutorial's design and the plain request,
which count none of them), and wall time; then totals per design, what each design spent per
solved objective (model calls, tool calls, tokens) and ratios against the tutorial (and of
replan against the plain request).

Without --base-url it runs against the scripted server of the test suite with a scripted model
that solves every objective (`benchmarks/scripted_answers.py`): a smoke test of the harness.
`--quirk NAME=VALUE` makes that server imitate a real one (a field of its `Quirks`, e.g.
`calls_as_text=tagged`: tool calls written as text, as llama.cpp's server returns them).
Every run is bounded (--max-iterations, --request-timeout, --timeout per run), so a weak model
ends unsolved instead of hanging. Progress goes to stderr, one line per run. `--answer` sets how
replan's designs write their final answer (`Context.answer`; default: replan's own default).

The suite has two halves (`benchmarks/objectives.py`): the development half, which a run without
`--objective` runs (`--objective development` names it), and the held-back half, chosen on
2026-11-26 and not to be tuned on from then: `--objective held-back` runs it, to judge a change
made on the development half. `--objective all` runs both; `--objective NAME` one objective.

Run: python benchmarks/eval_objectives.py [--base-url URL --model M | --quirk NAME=VALUE...]
     [--objective NAME|development|held-back|all]... [--design NAME]...
     [--answer plain|decision] [--repeat K] [--timeout S] [--json]
Exit codes: 0 every run solved, 1 some run not solved, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests` and `benchmarks`

from benchmarks.command_line import Parser, positive  # noqa: E402
from benchmarks.objectives import (  # noqa: E402
    DEVELOPMENT,
    HELD_BACK,
    OBJECTIVES,
    Kit,
    Objective,
    Outcome,
)
from benchmarks.scripted_answers import respond  # noqa: E402
from benchmarks.text_table import table_line  # noqa: E402
from benchmarks.tutorial import (  # noqa: E402
    baseline_chat_model,
    forcing_decision,
    tutorial_graph,
)
from replan.graphs.context import (  # noqa: E402
    ANSWER_MODES,
    DEFAULT_ANSWER,
    AnswerMode,
    Context,
    TaskToolsChoice,
)
from replan.graphs.graph_state import ACT, EXECUTOR, fallbacks_of  # noqa: E402
from replan.graphs.persistence import checkpoint_serializer  # noqa: E402
from replan.graphs.plan_execute import build_plan_execute_graph  # noqa: E402
from replan.state import FileTaskStore  # noqa: E402
from replan.state.tasks import TaskContext  # noqa: E402
from replan.testing import MODEL_ID, Quirks, Reply, ScriptedOpenAIServer  # noqa: E402
from replan.tools.task_tools import task_tools  # noqa: E402

DESIGNS = ("replan", "when_needed", "tool_steps_off", "tutorial", "plain")
"""replan with default settings, replan with replan="when_needed", replan with
tool_steps="off", the tutorial's design, and one plain request (no agent, no tools)."""
WAVE_NODES = {
    "replan": EXECUTOR,
    "when_needed": EXECUTOR,
    "tool_steps_off": EXECUTOR,
    "tutorial": "agent",
}
"""The node that carries out one plan step, in each design."""
EXECUTOR_MODEL_NODES = {
    "replan": ACT,
    "when_needed": ACT,
    "tool_steps_off": ACT,
    "tutorial": "agent",
}
"""The node whose model calls carry out one plan step, in each design (inside its loop)."""
BASELINES = {"tutorial": "tutorial", "tool_steps_off": "replan", "plain": "replan"}
"""Ratios printed: every agent design against the tutorial's; replan against tool steps off
and against one plain request."""
HALVES = {"development": DEVELOPMENT, "held-back": HELD_BACK, "all": tuple(OBJECTIVES)}
"""What `--objective` takes besides one objective's name: a half of the suite, or both."""


def _fallbacks(state: Mapping[str, Any]) -> int:
    """How many ways of asking for decisions the server refused (the `decision_mode` record)."""
    return len(fallbacks_of(state.get("decision_mode")))


@dataclass(frozen=True)
class Counter:
    """Events replan's final state counts, shown in the table's `column`; `read` counts them
    in a state, by default the int state channel named by the counter's key."""

    column: str
    read: Callable[[Mapping[str, Any]], int] | None = None

    def count(self, key: str, state: Mapping[str, Any]) -> int:
        """The count in `state` (0 when it has not counted any)."""
        return self.read(state) if self.read else int(state.get(key, 0))


COUNTERS = {
    "corrected_mistakes": Counter("mistakes"),
    "recovered_calls": Counter("text calls"),
    "fallbacks": Counter("fallbacks", _fallbacks),
}
"""What a replan run counts, by key. The tutorial's design counts none of it: its runs have no
counters (the table shows "-")."""
NOT_COUNTED = "-"
MAX_ITERATIONS = 8
ANSWER_CHARS = 400
ERROR_CHARS = 200
"""How much of a run's answer the JSON report keeps."""
EXECUTOR_MAX_STEPS = 8
REQUEST_TIMEOUT = 120.0
RUN_TIMEOUT = 600.0
MODEL_RETRIES = 1
_DEFAULTS = Context(model=MODEL_ID, base_url=None)
TASK_LIST_TOOLS: TaskToolsChoice = "compact"
"""How every design is offered the task tools for an objective about a task list (other
objectives get none, as replan's runs by default)."""
DECISION_MAX_TOKENS = _DEFAULTS.decision_max_tokens
EXECUTOR_MAX_TOKENS = _DEFAULTS.executor_max_tokens


@dataclass(frozen=True)
class Bounds:
    """How far one run may go."""

    max_iterations: int = MAX_ITERATIONS
    request_timeout: float = REQUEST_TIMEOUT
    run_timeout: float = RUN_TIMEOUT
    answer: AnswerMode = DEFAULT_ANSWER
    """How replan's designs write the final answer (`Context.answer`)."""
    task_tools: TaskToolsChoice | None = None
    """How every design is offered the task tools ("none": not offered); None: as the
    objective needs (`TASK_LIST_TOOLS` for one about a task list, else none)."""

    def task_tools_for(self, objective: Objective) -> TaskToolsChoice:
        """How every design is offered the task tools for `objective`."""
        if self.task_tools is not None:
            return self.task_tools
        return TASK_LIST_TOOLS if objective.task_list else "none"

    decision_max_tokens: int = DECISION_MAX_TOKENS
    """Reply limit of a planner or replanner decision, in every design."""
    executor_max_tokens: int = EXECUTOR_MAX_TOKENS
    """Reply limit of an executor (replan) or agent (tutorial) turn."""


@dataclass
class Run:
    """One objective run with one design, and what it cost."""

    objective: str
    design: str
    solved: bool
    model_calls: int
    tool_calls: int
    input_tokens: int | None
    output_tokens: int | None
    processed_tokens: int | None
    """The input tokens the server read (`input_tokens` less those its prompt cache held)."""
    widest_wave: int
    counters: dict[str, int]
    """By key of `COUNTERS`; empty for the tutorial's design, which counts none of it."""
    wall: float
    error: str = ""
    """Why the run ended without an answer to check (exception, timeout, stop_reason)."""
    answer: str = ""
    """The run's final answer, shortened (to see why a run was not solved)."""
    steps: list[str] = field(default_factory=list)
    """replan's executed steps, each `status: step -> result`, shortened."""
    executor_steps: int = 0
    """Plan steps a model carried out (an executor loop, the tutorial's agent)."""
    executor_processed: int | None = None
    """Input tokens the server read (less its cache's) for those steps' model calls."""


class Meter(UsageMetadataCallbackHandler):
    """Counts chat model calls, the calls whose reply carried no usage and tool runs, on top of
    LangChain's usage totals."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.unreported = 0
        self.tool_calls = 0
        self.nodes: dict[UUID, str] = {}
        """The graph node of each model call, by its run id."""
        self.processed_in: dict[str, int] = {}
        """Input tokens the server read (less its cache's) per graph node."""

    def on_tool_start(
        self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        with self._lock:
            self.tool_calls += 1

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        node = str((kwargs.get("metadata") or {}).get("langgraph_node", ""))
        with self._lock:
            self.calls += 1
            self.nodes[run_id] = node

    def on_llm_end(self, response: LLMResult, *, run_id: UUID | None = None, **kwargs: Any) -> None:
        super().on_llm_end(response, **kwargs)
        generation = response.generations[0][0] if response.generations[0:1] else None
        message = generation.message if isinstance(generation, ChatGeneration) else None
        if not (isinstance(message, AIMessage) and message.usage_metadata):
            with self._lock:
                self.unreported += 1
            return
        usage = message.usage_metadata
        read = usage["input_tokens"] - (usage.get("input_token_details") or {}).get("cache_read", 0)
        with self._lock:
            node = self.nodes.get(run_id, "") if run_id is not None else ""
            self.processed_in[node] = self.processed_in.get(node, 0) + read

    def processed(self) -> int | None:
        """Input tokens the server read rather than took from its prompt cache (all of them
        where it reports no cache); None unless every answered call reported its usage."""
        sent = self.tokens("input_tokens")
        if sent is None:
            return None
        cached = sum(
            (usage.get("input_token_details") or {}).get("cache_read", 0)
            for usage in self.usage_metadata.values()
        )
        return sent - cached

    def tokens(self, kind: Literal["input_tokens", "output_tokens"]) -> int | None:
        """Input or output tokens of all calls; None unless every answered call reported them."""
        if self.unreported or not self.usage_metadata:
            return None
        return sum(usage[kind] for usage in self.usage_metadata.values())


def counters(state: Mapping[str, Any]) -> dict[str, int]:
    """Every counter of `COUNTERS` in replan's final `state`."""
    return {key: counter.count(key, state) for key, counter in COUNTERS.items()}


def _one_line(error: BaseException) -> str:
    return _short(f"{type(error).__name__}: {str(error) or 'no message'}", ERROR_CHARS)


def _graph(
    design: str,
    tools: list[BaseTool],
    folder: Path,
    server: Server,
    bounds: Bounds,
    offer: TaskToolsChoice,
) -> Any:
    """The graph of `design` with `tools` (and the task tools as `offer` says), and the
    tutorial's task store (None for replan, whose task list is in its state)."""
    saver = InMemorySaver(serde=checkpoint_serializer())
    if design == "tutorial":

        def model(max_tokens: int) -> ChatOpenAI:
            return baseline_chat_model(
                server.base_url,
                server.model,
                max_tokens=max_tokens,
                timeout=bounds.request_timeout,
                max_retries=MODEL_RETRIES,
            )

        store = FileTaskStore(folder / "tasks")  # the agent has no task list in its state
        offered = [] if offer == "none" else task_tools(store=store, detail=offer)
        graph = tutorial_graph(
            model(bounds.executor_max_tokens),
            saver,
            [*tools, *offered],
            decision_model=model(bounds.decision_max_tokens),
            executor_max_steps=EXECUTOR_MAX_STEPS,
        )
        return graph, store
    graph = build_plan_execute_graph(
        tools=tools,
        checkpointer=saver,
        max_iterations=bounds.max_iterations,
        executor_max_steps=EXECUTOR_MAX_STEPS,
    )
    return graph, None


async def ask_plainly(
    objective: Objective, server: Server, bounds: Bounds, meter: Meter
) -> tuple[str, str]:
    """The `plain` design: the objective as one request to the model, no agent and no tools
    (bounded like an executor's turn); its answer and an error, if any."""
    model = baseline_chat_model(
        server.base_url,
        server.model,
        max_tokens=bounds.executor_max_tokens,
        timeout=bounds.request_timeout,
        max_retries=MODEL_RETRIES,
    )
    try:
        async with asyncio.timeout(bounds.run_timeout):
            reply = await model.ainvoke(objective.text, {"callbacks": [meter]})
    except TimeoutError:
        return "", f"stopped after the run timeout of {bounds.run_timeout:g} s"
    except Exception as exc:  # a weak model's run may fail in any way: record it
        return "", _one_line(exc)
    return reply.text, ""


async def run_plainly(objective: Objective, server: Server, bounds: Bounds) -> Run:
    """Ask `objective` in one plain request and check its answer."""
    meter = Meter()
    with tempfile.TemporaryDirectory(prefix="replan-eval-") as folder:
        started = time.perf_counter()
        answer, error = await ask_plainly(objective, server, bounds, meter)
        wall = time.perf_counter() - started
        solved = not error and objective.check(Outcome(answer, TaskContext(), Kit(Path(folder))))
    return Run(
        objective=objective.name,
        design="plain",
        solved=solved,
        model_calls=meter.calls,
        tool_calls=0,
        input_tokens=meter.tokens("input_tokens"),
        processed_tokens=meter.processed(),
        output_tokens=meter.tokens("output_tokens"),
        widest_wave=0,
        counters={},
        wall=wall,
        error=error,
        answer=_short(answer, ANSWER_CHARS),
    )


async def run_one(objective: Objective, design: str, server: Server, bounds: Bounds) -> Run:
    """Run `objective` with `design` and check its answer."""
    if design == "plain":
        return await run_plainly(objective, server, bounds)
    meter, widest, error = Meter(), 0, ""
    config: RunnableConfig = {"configurable": {"thread_id": "eval"}, "callbacks": [meter]}
    with tempfile.TemporaryDirectory(prefix="replan-eval-") as folder:
        kit = Kit(Path(folder))
        offer = bounds.task_tools_for(objective)
        tools = kit.tools(objective.tools)
        graph, store = _graph(design, tools, Path(folder), server, bounds, offer)
        if store is not None:
            config["recursion_limit"] = 2 * bounds.max_iterations + 2
            inputs: dict[str, Any] = {"input": objective.text}
            options: dict[str, Any] = {}
        else:
            inputs = {"messages": [("user", objective.text)]}
            context = Context(
                model=server.model,
                base_url=server.base_url,
                replan="when_needed" if design == "when_needed" else "each_wave",
                tool_steps="off" if design == "tool_steps_off" else "auto",
                answer=bounds.answer,
                timeout=bounds.request_timeout,
                max_retries=MODEL_RETRIES,
                task_tools=offer,
                decision_max_tokens=bounds.decision_max_tokens,
                executor_max_tokens=bounds.executor_max_tokens,
            )
            options = {"context": context}
        started = time.perf_counter()
        try:
            async with asyncio.timeout(bounds.run_timeout):
                per_step: dict[int, int] = {}
                async for event in graph.astream(inputs, config, stream_mode="debug", **options):
                    if event["type"] == "task" and event["payload"]["name"] == WAVE_NODES[design]:
                        per_step[event["step"]] = per_step.get(event["step"], 0) + 1
                        widest = max(widest, per_step[event["step"]])
        except TimeoutError:
            error = f"stopped after the run timeout of {bounds.run_timeout:g} s"
        except Exception as exc:  # a weak model's run may fail in any way: record it
            error = _one_line(exc)
        wall = time.perf_counter() - started
        state = (await graph.aget_state(config)).values
        if not error and state.get("stop_reason"):  # replan's answer lists what was done
            error = f"stopped: {state['stop_reason']}"
        tasks = store.read() if store is not None else state.get("tasks_context", TaskContext())
        outcome = Outcome(str(state.get("response", "")), tasks, kit)
        solved = not error and objective.check(outcome)
    return Run(
        objective=objective.name,
        design=design,
        solved=solved,
        model_calls=meter.calls,
        tool_calls=meter.tool_calls,
        input_tokens=meter.tokens("input_tokens"),
        processed_tokens=meter.processed(),
        output_tokens=meter.tokens("output_tokens"),
        widest_wave=widest,
        counters={} if design == "tutorial" else counters(state),
        wall=wall,
        error=error,
        answer=_short(str(state.get("response", "")), ANSWER_CHARS),
        steps=[
            f"{done.get('status', 'done')}: {done['step']} -> {_short(done['result'], 120)}"
            for done in state.get("executed_steps", [])
        ],
        executor_steps=_model_steps(design, state),
        executor_processed=None
        if meter.tokens("input_tokens") is None
        else meter.processed_in.get(EXECUTOR_MODEL_NODES[design], 0),
    )


def _model_steps(design: str, state: Mapping[str, Any]) -> int:
    """How many plan steps a model carried out in `design`'s final `state` (replan's tool steps
    call no model)."""
    if design == "tutorial":
        return len(state.get("past_steps", []))
    return sum("tool" not in done for done in state.get("executed_steps", []))


def _short(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# --- totals and the table -----------------------------------------------------------------


@dataclass
class Totals:
    """The runs of one design added up; tokens None when any run's are unknown."""

    runs: int = 0
    solved: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    processed_tokens: int | None = 0
    counters: dict[str, int] = field(default_factory=dict)
    """Added up over the runs that count them (none for the tutorial's design)."""
    wall: float = 0.0
    executor_steps: int = 0
    executor_processed: int | None = 0

    @property
    def calls_per_solved(self) -> float | None:
        """Model calls per solved objective (None when none was solved)."""
        return self.model_calls / self.solved if self.solved else None

    @property
    def read_per_step(self) -> float | None:
        """Input tokens the server read per plan step a model carried out (None when none was,
        or the server did not report them)."""
        if self.executor_processed is None or not self.executor_steps:
            return None
        return self.executor_processed / self.executor_steps


def per_solved(total: Totals) -> dict[str, float | None]:
    """What a design spent per solved objective: model calls, tool calls and tokens (input
    plus output; None when unknown), over all its runs; all None when it solved none."""
    tokens = (
        None
        if total.input_tokens is None or total.output_tokens is None
        else total.input_tokens + total.output_tokens
    )
    spent = {"tool_calls": total.tool_calls, "tokens": tokens}
    return {
        "model_calls": total.calls_per_solved,
        **{
            name: None if value is None or not total.solved else value / total.solved
            for name, value in spent.items()
        },
    }


def _plus(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def totals(runs: Sequence[Run]) -> dict[str, Totals]:
    """The runs added up per design, in the order the designs first appear."""
    by_design: dict[str, Totals] = {}
    for run in runs:
        total = by_design.setdefault(run.design, Totals())
        total.runs += 1
        total.solved += run.solved
        total.model_calls += run.model_calls
        total.tool_calls += run.tool_calls
        total.input_tokens = _plus(total.input_tokens, run.input_tokens)
        total.output_tokens = _plus(total.output_tokens, run.output_tokens)
        total.processed_tokens = _plus(total.processed_tokens, run.processed_tokens)
        for key, value in run.counters.items():
            total.counters[key] = total.counters.get(key, 0) + value
        total.wall += run.wall
        total.executor_steps += run.executor_steps
        total.executor_processed = _plus(total.executor_processed, run.executor_processed)
    return by_design


RATIO_FIELDS = (
    "solved",
    "model_calls",
    "calls_per_solved",
    "read_per_step",
    "tool_calls",
    "input_tokens",
    "processed_tokens",
    "output_tokens",
    "wall",
)


def ratios(by_design: dict[str, Totals]) -> dict[str, dict[str, float | None]]:
    """The totals of designs divided by those of a baseline (`BASELINES`: every replan design
    by the tutorial's, replan by tool steps off), None where either is unknown or the
    baseline's is 0."""
    out: dict[str, dict[str, float | None]] = {}
    for baseline, compared in BASELINES.items():
        base = by_design.get(baseline)
        if base is None:
            continue
        for design, total in by_design.items():
            if design == baseline or (compared != "tutorial" and design != compared):
                continue
            if compared == "tutorial" and design == "tutorial":
                continue
            row: dict[str, float | None] = {}
            for name in RATIO_FIELDS:
                top, bottom = getattr(total, name), getattr(base, name)
                row[name] = None if top is None or not bottom else top / bottom
            out[f"{design}/{baseline}"] = row
    return out


def _cell(value: int | float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _counter_cells(counted: dict[str, int]) -> list[str]:
    return [str(counted[key]) if key in counted else NOT_COUNTED for key in COUNTERS]


COLUMNS = (
    ("objective", 21),
    ("design", 16),
    ("solved", 7),
    ("calls", 6),
    ("tools", 6),
    ("in tok", 8),
    ("read tok", 9),
    ("out tok", 8),
    ("wave", 5),
    *((counter.column, 11) for counter in COUNTERS.values()),
    ("wall s", 8),
)


def _row(cells: Sequence[str]) -> str:
    return table_line(cells, COLUMNS)


def table(runs: Sequence[Run]) -> str:
    """The runs, totals per design and ratios against the tutorial, as text."""
    lines = [_row([name for name, _ in COLUMNS])]
    for run in runs:
        lines.append(
            _row(
                [
                    run.objective,
                    run.design,
                    "yes" if run.solved else "NO",
                    _cell(run.model_calls),
                    _cell(run.tool_calls),
                    _cell(run.input_tokens),
                    _cell(run.processed_tokens),
                    _cell(run.output_tokens),
                    _cell(run.widest_wave),
                    *_counter_cells(run.counters),
                    f"{run.wall:.2f}",
                ]
            )
        )
    by_design = totals(runs)
    lines.append("")
    for design, total in by_design.items():
        lines.append(
            _row(
                [
                    "total",
                    design,
                    f"{total.solved}/{total.runs}",
                    _cell(total.model_calls),
                    _cell(total.tool_calls),
                    _cell(total.input_tokens),
                    _cell(total.processed_tokens),
                    _cell(total.output_tokens),
                    "",
                    *_counter_cells(total.counters),
                    f"{total.wall:.2f}",
                ]
            )
        )
    for design, total in by_design.items():
        spent = ", ".join(
            f"{name.replace('_', ' ')} {_cell(value)}" for name, value in per_solved(total).items()
        )
        lines.append(f"{design} per solved objective: {spent}")
        if total.executor_steps:
            read = _cell(total.read_per_step)
            lines.append(f"{design} per step a model carried out: {read} input tokens read")
    for name, row in ratios(by_design).items():
        figures = ", ".join(
            f"{field_} x{value:.2f}" if value is not None else f"{field_} n/a"
            for field_, value in row.items()
        )
        lines.append(f"{name}: {figures}")
    errors = [f"{r.objective} / {r.design}: {r.error}" for r in runs if r.error]
    return "\n".join(lines + (["", "Errors:", *errors] if errors else []))


# --- the command --------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """Where the model is: base URL, model name, API key."""

    base_url: str
    model: str
    api_key: str


def scripted_model(request: dict[str, Any]) -> Reply:
    """The scripted model of the suite (`benchmarks/scripted_answers.py`), which reads the
    tutorial's decisions as forced `Plan` / `Act` calls, whichever way they are asked for."""
    return respond(forcing_decision(request))


@contextmanager
def serving(base_url: str | None, model: str | None, quirks: Quirks) -> Iterator[Server]:
    """The server given, or the scripted server answering with the scripted model. replan's
    graph reads the API key from OPENAI_API_KEY: a local server takes any, so one is set."""
    os.environ.setdefault("OPENAI_API_KEY", "local")
    if base_url:
        model = model or os.environ.get("REPLAN_MODEL") or MODEL_ID
        yield Server(base_url, model, os.environ["OPENAI_API_KEY"])
        return
    with ScriptedOpenAIServer(scripted_model, quirks=quirks) as scripted:
        yield Server(scripted.base_url, MODEL_ID, os.environ["OPENAI_API_KEY"])


async def run_suite(
    objectives: Sequence[Objective],
    designs: Sequence[str],
    repeat: int,
    server: Server,
    bounds: Bounds,
) -> list[Run]:
    """Every objective with every design, `repeat` times; a progress line per run on stderr."""
    runs = []
    for objective in objectives:
        for design in designs:
            for _ in range(repeat):
                run = await run_one(objective, design, server, bounds)
                verdict = (
                    "solved" if run.solved else "NOT solved" + (f" ({run.error})" * bool(run.error))
                )
                print(
                    f"{objective.name} / {design}: {verdict} in {run.wall:.1f} s, "
                    f"{run.model_calls} model calls",
                    file=sys.stderr,
                    flush=True,
                )
                runs.append(run)
    return runs


def _quirk(text: str) -> tuple[str, Any]:
    """NAME=VALUE for a field of the scripted server's `Quirks`; VALUE is JSON or a string."""
    name, equals, value = text.partition("=")
    known = [f.name for f in fields(Quirks)]
    if not equals or name not in known:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {known}")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line; bad flags or values exit 2 with one line."""
    parser = Parser(prog="eval_objectives.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="OpenAI-compatible server (default: scripted server)")
    parser.add_argument("--model", help="model name (default: $REPLAN_MODEL)")
    parser.add_argument(
        "--objective",
        action="append",
        choices=[*OBJECTIVES, *HALVES],
        default=[],
        help="an objective, or a half of the suite: 'development', 'held-back' (measured on, "
        "never tuned on), or 'all' for both (default: development)",
    )
    parser.add_argument("--design", action="append", choices=DESIGNS, default=[])
    parser.add_argument("--repeat", type=positive(int), default=1, help="runs of each pair")
    parser.add_argument(
        "--max-iterations", type=positive(int), default=MAX_ITERATIONS, help="rounds per run"
    )
    parser.add_argument(
        "--request-timeout", type=positive(float), default=REQUEST_TIMEOUT, help="s per call"
    )
    parser.add_argument(
        "--timeout",
        "--run-timeout",
        dest="run_timeout",
        type=positive(float),
        default=RUN_TIMEOUT,
        help="s per run",
    )
    parser.add_argument(
        "--answer",
        choices=ANSWER_MODES,
        default=DEFAULT_ANSWER,
        help="how replan's designs write the final answer (Context.answer)",
    )
    parser.add_argument(
        "--quirk", action="append", type=_quirk, default=[], help="scripted server: NAME=VALUE"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    options = parser.parse_args(argv)
    if options.quirk and options.base_url:
        parser.error("--quirk imitates a server with the scripted one: leave out --base-url")
    return options


def chosen(names: Sequence[str]) -> list[Objective]:
    """The objectives `--objective` names (objectives or halves, each once, in the order given);
    the development half when it names none."""
    found = [one for name in names or ["development"] for one in HALVES.get(name, [name])]
    return [OBJECTIVES[name] for name in dict.fromkeys(found)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite and print the table (or JSON); 0 when every run was solved."""
    options = parse_args(argv)
    objectives = chosen(options.objective)
    bounds = Bounds(
        options.max_iterations, options.request_timeout, options.run_timeout, options.answer
    )
    with serving(options.base_url, options.model, Quirks(**dict(options.quirk))) as server:
        runs = asyncio.run(
            run_suite(objectives, options.design or DESIGNS, options.repeat, server, bounds)
        )
    if options.json:
        by_design = totals(runs)
        report = {
            "runs": [asdict(run) for run in runs],
            "totals": {
                design: {**asdict(total), "read_per_step": total.read_per_step}
                for design, total in by_design.items()
            },
            "per_solved": {design: per_solved(total) for design, total in by_design.items()},
            "ratios": ratios(by_design),
        }
        print(json.dumps(report, indent=2))
    else:
        print(table(runs))
    return 0 if all(run.solved for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
