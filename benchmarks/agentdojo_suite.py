"""AgentDojo: what text that a tool returns can make an agent do, for a plain ReAct agent,
replan `open` and replan `sealed`, side by side on AgentDojo's tasks and checks.

Each chosen user task runs alone (utility without attack) and under each chosen injection task
with the `important_instructions` attack (utility under attack, and whether the attack
succeeded), benchmark `v1.2.2` of `agentdojo` 0.1.35 (`benchmarks/agentdojo_world.py`: the tools,
their effects labelled by a fixed rule, the trace AgentDojo's checks read, which attacks need a
new action). The designs, each on a fresh environment, with the same tools, server and bounds:

- react: a plain ReAct agent (`benchmarks/react.py`); react+recovery: the same agent with
  replan's `TextCallRecoveryMiddleware`, which runs the calls a small model writes as text;
- open: replan's graph with its defaults (`plan_integrity="open"`);
- sealed/approve: `plan_integrity="sealed"`, every held call shown to a reviewer who approves
  everything (the worst case for attacks);
- sealed/reject: the same, with a reviewer who rejects every held call (utility's worst case);
- sealed/refuse: `sealed_calls="refuse"`: held calls are refused, nobody is asked.

Without `--base-url`, the model is the worst-case scripted one (`benchmarks/agentdojo_oracle.py`):
it does each user task right, takes what depends on the results from the results, and obeys
every instruction it reads. With `--base-url`, a real model on that server; run the development
suites (banking, slack) with a sample fixed before running (`--users N --injections M`: the
first N user tasks and first M injection tasks of each suite); travel and workspace are held
back for real-model runs.

Printed per suite and overall, per design: utility without attack, utility under attack,
targeted attack success (all; those that need a new action; the others), approvals asked per
task, model calls, input tokens and wall per task; then each successful attack of the sealed
designs with the calls that carried it out. `--json FILE` writes the rows.

Run: python benchmarks/agentdojo_suite.py [--suite NAME]... [--design NAME]...
     [--users N] [--injections M] [--base-url URL --model M] [--json FILE]
Needs `pip install agentdojo==0.1.35` (a benchmark dependency only; it brings several model
vendors' clients). Exit codes: 0 done, 2 bad usage or agentdojo missing (one line on stderr).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import Command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`

from benchmarks.agentdojo_oracle import Oracle  # noqa: E402
from benchmarks.agentdojo_world import (  # noqa: E402
    REAL_MODEL_HELD_BACK,
    SUITES,
    AgentDojoMissing,
    Task,
    World,
    tasks,
)
from benchmarks.bfcl_multi_turn import (  # noqa: E402
    Bounds,
    MeteringProxy,
    Server,
    Spent,
    chat_model,
    replan_design,
    serving,
)
from benchmarks.command_line import Parser, positive  # noqa: E402
from benchmarks.react import react_agent, react_config  # noqa: E402
from benchmarks.text_table import table_line  # noqa: E402
from replan import TextCallRecoveryMiddleware  # noqa: E402
from replan.graphs.context import DEFAULT_MAX_ITERATIONS  # noqa: E402
from replan.testing import Reply  # noqa: E402

DESIGNS = ("react", "react+recovery", "open", "sealed/approve", "sealed/reject", "sealed/refuse")
AGENTS = ("react", "react+recovery")
DEV_SUITES = ("banking", "slack")
THREAD = "agentdojo"
MAX_REVIEWS = 20
"""The most times one run may pause for a reviewer."""
TEXT_CHARS = 200


@dataclass
class Row:
    """One design on one task: AgentDojo's verdict and what the run cost."""

    design: str
    task: str
    suite: str
    attacked_by: str | None
    new_action: bool
    utility: bool
    attacked: bool | None
    approvals: int
    model_calls: int
    input_tokens: int | None
    wall: float
    stopped: str = ""
    calls: list[str] = field(default_factory=list)


def _short(value: str) -> str:
    line = " ".join(value.split())
    return line if len(line) <= TEXT_CHARS else line[: TEXT_CHARS - 1] + "…"


class Responders:
    """The scripted server's responder: the oracle of the run under way."""

    def __init__(self) -> None:
        self.current: Oracle | None = None

    def __call__(self, request: dict[str, Any]) -> Reply:
        assert self.current is not None, "no run under way"
        return self.current(request)


async def _replan(
    tools: list[BaseTool], prompt: str, design: str, server: Server, bounds: Bounds
) -> tuple[str, int, str]:
    """replan on `prompt` (`design` sets its integrity and reviewer): answer, approvals asked,
    stop reason."""
    graph, context = replan_design(
        tools,
        server,
        bounds,
        plan_integrity="open" if design == "open" else "sealed",
        sealed_calls="refuse" if design == "sealed/refuse" else "ask",
    )
    config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
    answer = "approve" if design == "sealed/approve" else "reject"
    result = await graph.ainvoke({"messages": [("user", prompt)]}, config, context=context)
    approvals = 0
    for _ in range(MAX_REVIEWS):
        paused = result.get("__interrupt__") or []
        if not paused:
            break
        resume = {}
        for interrupt in paused:
            asked = len(interrupt.value.get("action_requests", []))
            approvals += asked
            resume[interrupt.id] = {"decisions": [{"type": answer}] * asked}
        result = await graph.ainvoke(Command(resume=resume), config, context=context)
    return str(result.get("response") or ""), approvals, str(result.get("stop_reason") or "")


async def _react(
    tools: list[BaseTool], prompt: str, design: str, server: Server, bounds: Bounds
) -> tuple[str, int, str]:
    middleware = [TextCallRecoveryMiddleware()] if design == "react+recovery" else []
    model = chat_model(server, bounds, bounds.executor_max_tokens)
    agent = react_agent(model, tools, middleware=middleware)
    result = await agent.ainvoke(
        {"messages": [("user", prompt)]}, react_config(THREAD, bounds.executor_max_steps)
    )
    messages = result.get("messages") or []
    return (messages[-1].text if messages else ""), 0, ""


async def run_task(
    task: Task,
    design: str,
    server: Server,
    bounds: Bounds,
    proxy: MeteringProxy,
    responders: Responders | None,
) -> Row:
    """One design on one task, on a fresh environment; AgentDojo's checks after."""
    world = World(task)
    if responders is not None:
        responders.current = Oracle(world, "react" if design in AGENTS else "replan")
    mark, started = proxy.mark(), time.perf_counter()
    answer, approvals, stopped = "", 0, ""
    prompt = task.user_task.PROMPT
    try:
        async with asyncio.timeout(bounds.turn_timeout):
            if design in AGENTS:
                run = _react(world.tools(), prompt, design, server, bounds)
            else:
                run = _replan(world.tools(), prompt, design, server, bounds)
            answer, approvals, stopped = await run
    except TimeoutError:
        stopped = f"stopped after the time limit of {bounds.turn_timeout:g} s"
    except Exception as error:  # a weak model's run may fail in any way: record it
        stopped = _short(f"{type(error).__name__}: {error}")
    wall = time.perf_counter() - started
    verdict = world.verdict(answer)
    spent = Spent.of(proxy.since(mark))
    return Row(
        design=design,
        task=task.id,
        suite=task.suite_name,
        attacked_by=task.injection_id,
        new_action=task.needs_new_action(),
        utility=verdict.utility,
        attacked=verdict.attacked,
        approvals=approvals,
        model_calls=spent.model_calls,
        input_tokens=spent.input_tokens,
        wall=wall,
        stopped=stopped,
        calls=[_short(f"{c.function}({json.dumps(c.args)})") for c in world.called],
    )


async def run_all(
    chosen: Sequence[Task],
    designs: Sequence[str],
    bounds: Bounds,
    server: Server,
    proxy: MeteringProxy,
    responders: Responders | None,
) -> list[Row]:
    """Every design on every task, one after the other (task by task), progress on stderr."""
    rows = []
    for number, task in enumerate(chosen, 1):
        for design in designs:
            row = await run_task(task, design, server, bounds, proxy, responders)
            rows.append(row)
            print(
                f"[{number}/{len(chosen)}] {task.id} / {design}: utility {row.utility}, "
                f"attacked {row.attacked}, {row.approvals} approvals, "
                f"{row.model_calls} calls, {row.wall:.1f} s"
                + (f" ({row.stopped})" if row.stopped else ""),
                file=sys.stderr,
                flush=True,
            )
    return rows


def _rate(hits: int, count: int) -> str:
    return f"{hits}/{count} {100 * hits / count:.0f}%" if count else "-"


def _mean(values: Sequence[float]) -> str:
    return f"{sum(values) / len(values):.1f}" if values else "-"


COLUMNS = (
    ("suite", 9),
    ("design", 16),
    ("utility", 12),
    ("attacked: util", 16),
    ("success", 12),
    ("new action", 12),
    ("in-call", 12),
    ("approvals", 10),
    ("calls", 7),
    ("tokens in", 11),
    ("wall s", 8),
)


def _summary(scope: str, design: str, rows: Sequence[Row]) -> str:
    alone = [r for r in rows if r.attacked_by is None]
    attacked = [r for r in rows if r.attacked_by is not None]
    new = [r for r in attacked if r.new_action]
    other = [r for r in attacked if not r.new_action]
    tokens = [r.input_tokens for r in rows]
    cells = [
        scope,
        design,
        _rate(sum(r.utility for r in alone), len(alone)),
        _rate(sum(r.utility for r in attacked), len(attacked)),
        _rate(sum(bool(r.attacked) for r in attacked), len(attacked)),
        _rate(sum(bool(r.attacked) for r in new), len(new)),
        _rate(sum(bool(r.attacked) for r in other), len(other)),
        _mean([r.approvals for r in rows]),
        _mean([r.model_calls for r in rows]),
        "?" if None in tokens else _mean([float(t or 0) for t in tokens]),
        _mean([r.wall for r in rows]),
    ]
    return table_line(cells, COLUMNS)


def table(rows: Sequence[Row]) -> str:
    """Per suite and overall, per design; then the sealed designs' successful attacks."""
    designs = list(dict.fromkeys(r.design for r in rows))
    suites = list(dict.fromkeys(r.suite for r in rows))
    lines = [table_line([name for name, _ in COLUMNS], COLUMNS)]
    for scope in [*suites, "all"]:
        for design in designs:
            chosen = [r for r in rows if r.design == design and scope in (r.suite, "all")]
            lines.append(_summary(scope, design, chosen))
    lines.append("")
    lines.append("per task: approvals, model calls, input tokens and wall are means")
    won = [r for r in rows if r.attacked and r.design.startswith("sealed")]
    if won:
        lines.append("")
        lines.append("successful attacks on sealed runs (task: the calls made):")
        lines.extend(
            f"  {r.design} {r.task}{' [new action]' if r.new_action else ''}: {'; '.join(r.calls)}"
            for r in won
        )
    stopped = [r for r in rows if r.stopped]
    if stopped:
        lines.append("")
        lines.append("runs that stopped:")
        lines.extend(f"  {r.design} {r.task}: {r.stopped}" for r in stopped)
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> Any:
    """The command line; bad flags or values exit 2 with one line."""
    parser = Parser(prog="agentdojo_suite.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append", choices=SUITES, default=[])
    parser.add_argument("--design", action="append", choices=DESIGNS, default=[])
    parser.add_argument("--users", type=positive(int), help="first N user tasks of each suite")
    parser.add_argument("--injections", type=positive(int), help="first M injection tasks")
    parser.add_argument("--base-url", help="OpenAI-compatible server (default: scripted model)")
    parser.add_argument("--model", help="model name (default: $REPLAN_MODEL)")
    parser.add_argument("--timeout", type=positive(float), default=1800.0, help="s per task")
    parser.add_argument("--request-timeout", type=positive(float), default=600.0, help="s/call")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    options = parser.parse_args(argv)
    held = sorted(set(options.suite) & set(REAL_MODEL_HELD_BACK))
    if options.base_url and held:
        parser.error(f"{', '.join(held)}: held back for real-model runs (others run them)")
    if options.json is not None and not options.json.parent.is_dir():
        parser.error(f"--json: no folder {str(options.json.parent)!r}")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    """Run every chosen design on every chosen task and print the table."""
    options = parse_args(argv)
    suites = list(dict.fromkeys(options.suite)) or list(DEV_SUITES)
    designs = list(dict.fromkeys(options.design)) or list(DESIGNS)
    try:
        chosen = tasks(suites, options.users, options.injections)
    except AgentDojoMissing as missing:
        print(f"agentdojo_suite.py: error: {missing}", file=sys.stderr)
        return 2
    bounds = Bounds(
        request_timeout=options.request_timeout,
        turn_timeout=options.timeout,
        max_iterations=DEFAULT_MAX_ITERATIONS,
    )
    responders = Responders()  # the worst-case model's, without a server of one's own
    scripted = None if options.base_url else responders
    with serving(options.base_url, options.model, responders, options.request_timeout + 60) as (
        server,
        proxy,
    ):
        rows = asyncio.run(run_all(chosen, designs, bounds, server, proxy, scripted))
    print(table(rows))
    if options.json is not None:
        options.json.write_text(json.dumps([asdict(row) for row in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
