"""A deterministic plan–execute–replan model for tests: a pure function of the request.

`respond(request)` plays every role of the graph, recognised by the tools the request offers:

- planner — the request forces (or only offers) the `plan` tool: a plan of N steps named
  ``Step i of N [topic]`` where topic is the objective's first words. The objective sets the
  shape: "in N steps" is a chain of plain strings (default 3 steps), "in N parallel steps" has
  N steps that need nothing, "in N diamond steps" is one step, N - 2 steps that need it, and a
  last step that needs those (`dependencies`);
- replanner — offers `plan` and `respond`: `plan` with the steps whose result marker is not yet
  in the prompt (their dependencies named by the steps' own numbers, which do not move: step i
  of the first plan is step i), or `respond` once every step's is;
- answer — the plain-text final answer (`is_answer_request`): the replanner's answer, from the
  results in the prompt (a run with no tools, answered at once: `DIRECT_ANSWER` and the
  request's first words);
- executor — anything else: a text result carrying the marker ``RESULT i/N`` for the first step
  named in the prompt without one (`Script(result_chars=...)` pads results to a length).

A plan with other steps (a reviewer's edit) runs too: the executor carries out whatever step
its briefing ends with (`CARRIED_OUT` and the step's text), the replanner plans again the steps
its briefing lists as still planned and responds, with the results listed, once none is. A
request of no role of the graph (an agent that has replan as its tool, a plain chat) gets its
first tool called with its request, then an answer from the tools' results (`DONE`); with no
tool, an answer at once. `classify` gives both the executor's role with no step number.

A decision asked for in another mode (a JSON reply, or one `decide` tool) is recognised by the
fields it asks for; the scripted server turns the scripted call into what was asked.

Since nothing is remembered between calls, two processes may share one server and a run may
be killed and resumed.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any

from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing.replies import Reply, Responder, text, tool_call
from replan.testing.requests import (
    asked_fields,
    executor_step,
    first_param,
    forced_tool,
    is_answer_request,
    is_direct_answer,
    is_unmade_calls_request,
    last_user_text,
    message_text,
    objective,
    planned_steps,
    prompt_text,
    tool_names,
)

DEFAULT_STEPS = 3
_STEP = re.compile(r"Step (\d+) of (\d+) \[([a-z0-9 ]*)\]")
_RESULT = re.compile(r"RESULT (\d+)/(\d+)")
_EARLIER = re.compile(r"Earlier in this conversation:.*?(?=\n# |\Z)", re.S)
"""What a follow-up's replanner is shown of earlier turns (their answers repeat markers)."""
_STEP_COUNT = re.compile(r"\bin (\d+) (parallel |diamond )?steps\b", re.IGNORECASE)
_LISTED = re.compile(r"^\d+\. (.*)\n {3}Result: (.*)$", re.M)
"""A step with its result (the first line of it), as replan's briefings list the steps done."""
ROLES = ("planner", "executor", "replanner", "answer")
DIRECT_ANSWER = "Answered at once:"
"""How the scripted answer of a run with no tools starts (followed by the request's words)."""
CARRIED_OUT = "Carried out:"
"""How the result of a step not named "Step i of N" starts (followed by the step's text)."""
RESULTS = "Results:"
"""How the answer to a plan of other steps starts (followed by the results, `; ` between)."""
DONE = "Done:"
"""How the answer to an agent's request starts once its tools answered (followed by what they
returned)."""
FILLER = " The details of this step are written out here at length."


@dataclass(frozen=True)
class Call:
    """What a request asks for: `role` is planner/executor/replanner; `step` for the executor."""

    role: str
    step: int | None = None


def step_text(index: int, total: int, topic: str) -> str:
    """The text of step `index` (1-based) of a `total`-step plan."""
    return f"Step {index} of {total} [{topic}]"


def dependencies(shape: str, total: int) -> list[list[int]] | None:
    """The 1-based positions each step of a `shape` plan waits for; None for plain strings."""
    if shape == "parallel":
        return [[] for _ in range(total)]
    if shape == "diamond":
        middle = list(range(2, total))
        return [[], *([[1]] * len(middle)), middle]
    return None


def _done(prompt: str) -> set[int]:
    """The steps whose result the prompt shows (not the markers earlier answers repeat)."""
    return {int(match[0]) for match in _RESULT.findall(_EARLIER.sub("", prompt))}


def _plan_shape(prompt: str) -> tuple[int, str] | None:
    """(total, topic) from the first step named in the prompt."""
    match = _STEP.search(prompt)
    return (int(match[2]), match[3]) if match else None


def classify(request: dict[str, Any]) -> Call:
    """Which graph node sent `request` and, for the executor, which step it runs."""
    if is_answer_request(request):
        return Call("answer")
    names = tool_names(request)
    asked = asked_fields(request)
    if is_unmade_calls_request(request):
        return Call("replanner")
    if forced_tool(request) == "plan" or names == ["plan"] or asked == {"steps"}:
        return Call("planner")
    if ("plan" in names and "respond" in names) or asked == {"steps", "response"}:
        return Call("replanner")
    prompt = prompt_text(request)
    done = _done(prompt)
    pending = [int(m[0]) for m in _STEP.findall(prompt) if int(m[0]) not in done]
    return Call("executor", pending[0] if pending else None)


def plan_items(prompt: str, steps: Sequence[int], total: int, topic: str) -> list[Any]:
    """Steps `steps` (1-based indices of the full plan) as the `plan` tool takes them; the
    shape comes from the objective in `prompt`. A step's number is its index (in a first plan,
    its position; a replan keeps the numbers), so dependencies are named by index."""
    count = _STEP_COUNT.search(prompt)
    shape = (count[2] or "").strip().lower() if count else ""
    waits = dependencies(shape, total)
    if waits is None:
        return [step_text(i, total, topic) for i in steps]
    return [{"step": step_text(i, total, topic), "depends_on": waits[i - 1]} for i in steps]


def first_plan(request: dict[str, Any]) -> list[Any]:
    """The planner's steps for the objective of `request`."""
    goal = objective(request)
    count = _STEP_COUNT.search(goal)
    total = int(count[1]) if count else DEFAULT_STEPS
    topic = " ".join(re.sub(r"[^a-z0-9 ]", " ", goal.lower()).split()[:5])
    return plan_items(goal, range(1, total + 1), total, topic)


def _listed(prompt: str) -> list[tuple[str, str]]:
    """The steps the prompt lists as done in this turn, each with the first line of its result."""
    return _LISTED.findall(_EARLIER.sub("", prompt))


def _scripted(steps: list[str]) -> bool:
    """Whether every one of `steps` is named "Step i of N [topic]" (followed by its markers)."""
    return all(_STEP.fullmatch(step) for step in steps)


def results_answer(listed: list[tuple[str, str]]) -> str:
    """The answer to a plan of other steps than "Step i of N": `RESULTS` and every result."""
    return f"{RESULTS} {'; '.join(result for _, result in listed)}"


def replan(request: dict[str, Any]) -> list[Any] | str | None:
    """The replanner's decision: the steps still to do, or the final answer once all are (None
    when the prompt names no step). A plan with other steps than "Step i of N" is followed from
    the briefing: the steps it lists as still planned, word for word, else the answer."""
    prompt = prompt_text(request)
    planned = planned_steps(request)
    if planned is not None:
        listed = _listed(prompt)
        texts = [item if isinstance(item, str) else item["step"] for item in planned]
        if not _scripted(texts + [step for step, _ in listed]):
            return planned or results_answer(listed)
    shape = _plan_shape(prompt)
    if shape is None:
        return None
    total, topic = shape
    done = _done(prompt)
    remaining = [i for i in range(1, total + 1) if i not in done]
    if remaining:
        return plan_items(prompt, remaining, total, topic)
    return final_answer(total, topic, done)


def final_answer(total: int, topic: str, done: set[int]) -> str:
    """The answer once the steps `done` (all `total`, when the replanner responds) are."""
    results = ", ".join(f"RESULT {i}/{total}" for i in sorted(done))
    if len(done) == total:
        return f"All {total} steps of [{topic}] are done: {results}"
    return f"{len(done)} of {total} steps of [{topic}] are done: {results}"


def answered_at_once(asked: str) -> str:
    """The answer to a request with nothing to carry out: `DIRECT_ANSWER` and its first words."""
    return f"{DIRECT_ANSWER} {' '.join(asked.split()[:8])}"


def answer(request: dict[str, Any]) -> str:
    """The plain-text final answer, from the results the request shows (a run with no tools,
    answered at once: `DIRECT_ANSWER` and the objective's first words)."""
    if is_direct_answer(request):
        return answered_at_once(last_user_text(request).removesuffix(DEFAULT_PROMPTS.answer_direct))
    prompt = prompt_text(request)
    shape = _plan_shape(prompt)
    listed = _listed(prompt)
    if shape is None or not _scripted([step for step, _ in listed]):
        return results_answer(listed) if listed else "scripted answer: no step found in the prompt"
    return final_answer(shape[0], shape[1], _done(prompt))


def step_result(request: dict[str, Any], result_chars: int = 0) -> str:
    """The executor's report on the step it runs, padded to `result_chars`: ``RESULT i/N`` for
    "Step i of N", `CARRIED_OUT` and the text for any other step its briefing ends with."""
    call = classify(request)
    shape = _plan_shape(prompt_text(request))
    step = executor_step(request)
    if call.step is not None and shape is not None:
        result = f"Executed step {call.step}: RESULT {call.step}/{shape[0]}"
    elif step is not None:
        result = f"{CARRIED_OUT} {step}"
    else:
        return "scripted executor: no pending step found in the prompt"
    while len(result) < result_chars:
        result += FILLER
    return result


def agent_reply(request: dict[str, Any]) -> Reply:
    """The reply to a request of no role of replan's graph (an agent that has replan as its
    tool, a plain chat): a call of its first tool with the request's text, then `DONE` and what
    the tools returned; with no tool, an answer at once."""
    messages = request.get("messages") or []
    returned = [
        message_text(m) for m in takewhile(lambda m: m.get("role") == "tool", messages[::-1])
    ]
    if returned:
        return text(f"{DONE} {'; '.join(reversed(returned))}")
    asked = last_user_text(request)
    names = tool_names(request)
    if not names:
        return text(answered_at_once(asked))
    key = first_param(request, names[0], "")
    return tool_call(names[0], {key: asked} if key else {})


@dataclass(frozen=True)
class Script:
    """The scripted model as a responder; `result_chars` pads every step's result."""

    result_chars: int = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = classify(request)
        if call.role == "planner":
            return tool_call("plan", {first_param(request, "plan", "steps"): first_plan(request)})
        if call.role == "replanner":
            decision = replan(request)
            if decision is None:
                return text("scripted replanner: no step found in the prompt")
            if isinstance(decision, str):
                key = first_param(request, "respond", "response")
                return tool_call("respond", {key: decision})
            return tool_call("plan", {first_param(request, "plan", "steps"): decision})
        if call.role == "answer":
            return text(answer(request))
        if call.step is None and executor_step(request) is None:
            return agent_reply(request)
        return text(step_result(request, self.result_chars))


respond = Script()
"""The scripted model's answer to a request (see the module docstring)."""


def executor_steps(requests: list[dict[str, Any]]) -> list[int | None]:
    """The step of every executor request in `requests`, in order (for assertions)."""
    return [c.step for c in map(classify, requests) if c.role == "executor"]


@dataclass(frozen=True)
class Span:
    """One request as the server handled it: the body, and when it arrived and was answered
    (`time.perf_counter()` seconds)."""

    request: dict[str, Any]
    start: float
    end: float

    @property
    def call(self) -> Call:
        return classify(self.request)


@dataclass
class Clock:
    """A responder that holds each reply for `latency` seconds (a number, or a function of the
    request) and records every request's `Span`, server-side."""

    responder: Responder = respond
    latency: float | Callable[[dict[str, Any]], float] = 0.0
    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: dict[str, Any]) -> Reply:
        start = time.perf_counter()
        time.sleep(self.latency(request) if callable(self.latency) else self.latency)
        reply = self.responder(request)
        with self.lock:
            self.spans.append(Span(request, start, time.perf_counter()))
        return reply

    def executor_spans(self) -> dict[int, Span]:
        """The span of each executed step, by step number (the last request for it)."""
        return {s.call.step: s for s in self.spans if s.call.role == "executor" and s.call.step}

    def most_at_once(self, role: str = "executor") -> int:
        """The largest number of `role` requests the server was handling at the same time."""
        events = sorted(
            (t, d)
            for s in self.spans
            if s.call.role == role
            for t, d in ((s.start, 1), (s.end, -1))
        )
        running = most = 0
        for _, change in events:
            running += change
            most = max(most, running)
        return most
