"""Tool steps next to executor loops and the tutorial design, on a slow scripted model.

Every run goes through `ChatOpenAI` to the scripted OpenAI-compatible server
(`replan.testing`), which holds each reply for `--latency` seconds (1 s by default: a small
local model). Two objectives, each with a deterministic tool:

- look-ups: 8 independent look-ups (`price(item)`), then one step that combines them;
- chain: 10 tool calls in a row, each on the result of the one before (`add_one(value)`).

Designs: replan with tool steps (the plan calls the tools itself; `replan="when_needed"`, so the
replanner is asked once nothing can run), the same with the default `replan="each_wave"`,
replan with `tool_steps="off"` (every step through an executor model loop, `when_needed`), and
LangGraph's plan-and-execute tutorial (`benchmarks/tutorial.py`). The scripted model plays each
design as a good model would, at the best the design allows: the tutorial plans each objective
as one step, which its ReAct agent carries out with all eight look-ups in one reply (parallel
tool calls) or the ten additions one after the other, then reports the answer, which the
replanner gives. For each it prints model calls, tool calls, wall time and the answer, then the
ratios and the targets (look-ups: at most 3 model calls and 3.5 s; chain: at most 3 model
calls).

These figures are scripted: the script decides each design's plan shape, so they show a
design's ceiling (the fewest calls it allows), not a measurement of a model.

Run: python benchmarks/bench_tool_steps.py [--latency 1.0]
Exit codes: 0 every target met, 1 some target missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`

from benchmarks.tutorial import tutorial_decision, tutorial_graph  # noqa: E402
from replan.graphs.context import Context  # noqa: E402
from replan.graphs.plan_execute import build_plan_execute_graph  # noqa: E402
from replan.testing import (  # noqa: E402
    MODEL_ID,
    Reply,
    ScriptedOpenAIServer,
    text,
    tool_call,
    tool_calls,
)
from replan.testing.plan_script import Clock, classify  # noqa: E402
from replan.testing.requests import message_text, prompt_text, step_tools  # noqa: E402

LATENCY = 1.0
LOOK_UPS = 8
CHAIN = 10
ITEMS = [f"item {i}" for i in range(1, LOOK_UPS + 1)]
LOOK_UP_OBJECTIVE = f"Look up the prices of {', '.join(ITEMS)} and give their total."
CHAIN_OBJECTIVE = f"Add one to 0, {CHAIN} times, one call after the other."
COMBINE = "Add up the eight prices"
TARGETS = {"look-ups": (3, 3.5), "chain": (3, None)}
"""Objective -> (most model calls, most wall seconds at 1 s latency) with tool steps."""
DESIGNS = ("tool steps", "tool steps, each_wave", "tool_steps off", "tutorial")


def price_of(item: str) -> float:
    """The scripted price of `item` ('item 3' costs 3.25)."""
    return int(item.split()[-1]) + 0.25


def total_price() -> float:
    return sum(price_of(item) for item in ITEMS)


@dataclass
class Tools:
    """The objectives' tools, counting their calls (parallel ones too)."""

    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> None:
        with self.lock:
            self.calls += 1

    def all(self) -> list[BaseTool]:
        counter = self

        @tool
        def price(item: str) -> str:
            """The price of an item, in EUR."""
            counter.count()
            return f"{item} costs {price_of(item):.2f}"

        @tool
        def add_one(value: float) -> float:
            """Add one to a number."""
            counter.count()
            return value + 1

        return [price, add_one]


# --- the scripted model ---------------------------------------------------------------------


def _look_up_plan() -> list[Any]:
    look_ups = [{"tool": "price", "args": {"item": item}} for item in ITEMS]
    return [*look_ups, {"step": COMBINE, "depends_on": list(range(1, LOOK_UPS + 1))}]


def _chain_plan() -> list[Any]:
    steps: list[Any] = [{"tool": "add_one", "args": {"value": 0}}]
    return steps + [{"tool": "add_one", "args": {"value": f"${i}"}} for i in range(1, CHAIN)]


_CHAIN_STEP = "Add one to the result of step"
_CHAIN_VALUES = re.compile(r"(?:Result: |→ |, '|Previous result: )(\d+\.\d+)")
"""The chain's values in a prompt: results as replan and the tutorial show them."""


def _text_plan(chain: bool) -> list[Any]:
    if chain:
        return [f"{_CHAIN_STEP} {i} (0 for the first)" for i in range(1, CHAIN + 1)]
    return [*(f"Look up the price of {item}" for item in ITEMS), COMBINE]


_PRICE_LINE = re.compile(r"item \d+ costs \d+\.\d+")


def _prices_in(prompt: str) -> list[float]:
    lines = dict.fromkeys(_PRICE_LINE.findall(prompt))  # each price once, however often shown
    return [float(line.rsplit(" ", 1)[1]) for line in lines]


def _answer(prompt: str, chain: bool) -> str:
    if chain:
        return f"The result is {max(map(float, _CHAIN_VALUES.findall(prompt)), default=0):g}."
    return f"The total is {sum(_prices_in(prompt)):.2f} EUR."


def _tutorial_agent(request: dict[str, Any], chain: bool) -> Reply:
    """The tutorial's agent on its one step: every look-up in one reply (parallel calls), or
    the additions one per reply on the result before; then the answer."""
    results = [message_text(m) for m in request.get("messages", []) if m.get("role") == "tool"]
    if chain and len(results) < CHAIN:
        return tool_call("add_one", {"value": float(results[-1]) if results else 0.0})
    if not chain and not results:
        return tool_calls([("price", {"item": item}) for item in ITEMS])
    if chain:
        return text(f"The result is {float(results[-1]):g}.")
    return text(_answer("\n".join(results), chain=False))


_TUTORIAL_ANSWER = re.compile(r"The (?:result|total) is [^'\"]*?\.(?=['\"])")


def _executor(request: dict[str, Any], chain: bool) -> Reply:
    """An executor of replan: the step's one tool call, then a report; the tutorial's agent
    (told to carry out step 1 of its plan) does its whole step."""
    messages = request.get("messages", [])
    asked = prompt_text({"messages": [m for m in messages if m.get("role") != "tool"]})
    if "Carry out step 1: " in asked:
        return _tutorial_agent(request, chain)
    if messages and messages[-1].get("role") == "tool":
        return text(str(messages[-1].get("content")))
    step = asked.rsplit("Carry out step 1: ", 1)[-1].rsplit("# Your step\n", 1)[-1]
    if COMBINE in step:
        return text(_answer(asked, chain=False))
    if chain:
        before = _CHAIN_VALUES.findall(asked)
        return tool_call("add_one", {"value": float(before[-1]) if before else 0.0})
    item = re.search(r"item \d+", step)
    return tool_call("price", {"item": item[0] if item else ITEMS[0]})


def _steps_done(prompt: str, chain: bool) -> int:
    return len(re.findall(r"add_one|Add one to", prompt)) if chain else len(_prices_in(prompt))


_CALL = re.compile(r"^\d+\. (\w+)\((.*)\)(?: \[after: [^\]]*\])?$")
_ARGUMENT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,]+)')


def _relisted(line: str) -> Any:
    """A step still planned, as the prompt shows it, written again as the plan takes it: a
    tool step `name(key=value, ...)` as a tool step, anything else as its text."""
    call = _CALL.match(line)
    if call is None:
        return line.split(". ", 1)[1].split(" [after")[0]
    args = {key: json.loads(value) for key, value in _ARGUMENT.findall(call[2])}
    return {"tool": call[1], "args": args}


def responder(request: dict[str, Any]) -> Reply:
    """The scripted model for both objectives and every design."""
    prompt = prompt_text(request)
    chain = CHAIN_OBJECTIVE in prompt or _CHAIN_STEP in prompt  # the tutorial's agent: no objective
    decision = tutorial_decision(request)
    if decision == "Plan":  # one step: the objective itself
        return tool_call("Plan", {"steps": [CHAIN_OBJECTIVE if chain else LOOK_UP_OBJECTIVE]})
    if decision == "Act":
        past = prompt.split("The steps done, with their results:", 1)[-1]
        answer = _TUTORIAL_ANSWER.search(past)
        action = {"response": answer[0]} if answer else {"steps": [LOOK_UP_OBJECTIVE]}
        return tool_call("Act", {"action": action})
    role = classify(request).role
    if role == "planner":
        steps = (_chain_plan() if chain else _look_up_plan()) if step_tools(request) else None
        return tool_call("plan", {"steps": steps or _text_plan(chain)})
    if role == "replanner":
        done = prompt.split("# Steps done", 1)[-1]
        planned = prompt.split("# Steps still planned", 1)[-1].split("# Steps done")[0]
        if "(none)" not in planned:
            lines = [line for line in planned.split("\n") if re.match(r"\d+\. ", line)]
            return tool_call("plan", {"steps": [_relisted(line) for line in lines]})
        return tool_call("respond", {"response": _answer(done, chain)})
    return _executor(request, chain)


# --- runs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """One run: model calls, tool calls, wall seconds, the answer."""

    model_calls: int
    tool_calls: int
    wall: float
    answer: str


async def _run(design: str, objective: str, base_url: str, clock: Clock) -> Figures:
    tools = Tools()
    before = len(clock.spans)
    started = time.perf_counter()
    if design == "tutorial":
        model = ChatOpenAI(
            model=MODEL_ID, base_url=base_url, api_key=SecretStr("local"), temperature=0
        )
        graph = tutorial_graph(model, tools=tools.all())
        config = {"recursion_limit": 200}
        result = await graph.ainvoke({"input": objective}, config)
    else:
        context = Context(
            model=MODEL_ID,
            base_url=base_url,
            max_retries=0,
            replan="each_wave" if design.endswith("each_wave") else "when_needed",
            tool_steps="off" if design == "tool_steps off" else "auto",
            max_iterations=2 * CHAIN,
            # The targets are the tool-steps design's own: the answer stays in the replanner's
            # decision. A plain-text answer (the default) adds one request to every run.
            answer="decision",
        )
        graph = build_plan_execute_graph(tools=tools.all())
        messages = {"messages": [("user", objective)]}
        result = await graph.ainvoke(messages, context=context)
    wall = time.perf_counter() - started
    return Figures(len(clock.spans) - before, tools.calls, wall, str(result.get("response")))


def measure(latency: float, designs: Sequence[str] = DESIGNS) -> dict[str, dict[str, Figures]]:
    """Every design on both objectives, against one scripted server."""
    os.environ.setdefault("OPENAI_API_KEY", "local")
    clock = Clock(responder, latency)
    objectives = {"look-ups": LOOK_UP_OBJECTIVE, "chain": CHAIN_OBJECTIVE}

    async def every_run(base_url: str) -> dict[str, dict[str, Figures]]:
        return {
            name: {design: await _run(design, text_, base_url, clock) for design in designs}
            for name, text_ in objectives.items()
        }

    with ScriptedOpenAIServer(clock) as server:  # one event loop: the clients keep connections
        return asyncio.run(every_run(server.base_url))


def _expected(objective: str) -> str:
    return f"{total_price():.2f}" if objective == "look-ups" else f"{CHAIN}"


def report(figures: dict[str, dict[str, Figures]], latency: float) -> tuple[str, bool]:
    """The table, ratios and targets as text, and whether every target was met."""
    lines, met = ["Scripted: each design at its ceiling (the script decides the plan shape)."], True
    check: Callable[[str, Figures], bool] = lambda name, f: _expected(name) in f.answer  # noqa: E731
    for name, runs in figures.items():
        lines.append(f"{name}:")
        lines.append(f"  {'design':24}{'model calls':>12}{'tool calls':>12}{'wall s':>9}  right")
        for design, f in runs.items():
            right = "yes" if check(name, f) else "NO"
            lines.append(
                f"  {design:24}{f.model_calls:>12}{f.tool_calls:>12}{f.wall:>9.2f}  {right}"
            )
        mine = runs["tool steps"]
        for baseline in ("tutorial", "tool_steps off"):
            if (base := runs.get(baseline)) is not None:
                calls, wall = mine.model_calls / base.model_calls, mine.wall / base.wall
                lines.append(
                    f"  tool steps / {baseline}: model calls x{calls:.2f}, wall x{wall:.2f}"
                )
        most_calls, most_wall = TARGETS[name]
        ok = mine.model_calls <= most_calls and check(name, mine)
        target = f"at most {most_calls} model calls"
        if most_wall is not None:
            scaled = most_wall * latency / LATENCY
            ok = ok and mine.wall <= scaled
            target += f" and {scaled:.2f} s"
        lines.append(f"  target ({target}): {'met' if ok else 'MISSED'}")
        met = met and ok
    return "\n".join(lines), met


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table, and 0 when every target is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=LATENCY, help="seconds per model reply")
    options = parser.parse_args(argv)
    text_, met = report(measure(options.latency), options.latency)
    print(text_)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
