"""A tool step: one direct call of one of the run's own tools, with no model call
(`replan.graphs.plan.tool_steps`: references to earlier results, the same call made once)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from replan.graphs.calls import Call, Steps
from replan.graphs.context import ToolErrorsChoice
from replan.graphs.graph_state import ExecutedStep, StepRun, StepStatus
from replan.graphs.plan.own_tools import OwnTools
from replan.graphs.plan.references import UnresolvedPath, references
from replan.graphs.plan.tool_steps import (
    WholeResult,
    format_call,
    same_call,
    says_error,
    substitute,
)
from replan.graphs.prompts import Prompts
from replan.graphs.seal import SEAL_KEY
from replan.graphs.tool_errors import reports, tool_error_text


def run_tool_step(
    run: StepRun, tools: OwnTools, prompts: Prompts, tool_errors: ToolErrorsChoice
) -> Steps[dict[str, Any]]:
    """Carry out a tool step: call its tool once, with its references replaced, and record the
    tool's answer (and whether the call may have acted). A call of a read-only tool an earlier
    step already made, with nothing acting since, takes that step's result instead; a step
    whose references are not done, whose tool the run does not have, whose reference puts a
    JSON object or list into a string argument, or whose reference's path names nothing, fails
    without a call;
    so does one whose tool raised, unless `tool_errors` says "raise" (`Context.tool_errors`);
    one whose tool answered with an error (status, or `says_error`) fails with that answer."""
    step = run["step"]
    tool, args = step.get("tool", ""), step.get("args") or {}
    results = {done["id"]: done for done in run["dependencies"] if "id" in done}

    def record(result: str, status: StepStatus, called: dict[str, Any]) -> ExecutedStep:
        shown = format_call(tool, called) if called is not args else step["step"]
        return {"id": step["id"], "step": shown, "result": result, "status": status,
                "tool": tool, "args": called}  # fmt: skip

    unready = sorted(
        n
        for n in references(args)
        if n not in results or results[n].get("status", "done") != "done"
    )
    if unready:
        result = prompts.tool_step_not_run.format(steps=", ".join(map(str, unready)))
        return {"executed_steps": [record(result, "failed", args)]}
    if tool not in tools.by_name:
        result = prompts.tool_step_no_tool.format(tool=tool)
        return {"executed_steps": [record(result, "failed", args)]}
    texts = {number: done["result"] for number, done in results.items()}
    try:
        called = substitute(args, texts, tools.parameters[tool], computes=tool in tools.computing)
    except WholeResult as unfit:
        result = prompts.tool_step_whole_result.format(argument=unfit.argument, shape=unfit.shape)
        return {"executed_steps": [record(result, "failed", args)]}
    except UnresolvedPath as unfit:
        result = prompts.tool_step_no_field.format(reference=unfit.reference, problem=unfit.problem)
        return {"executed_steps": [record(result, "failed", args)]}
    if same := same_call(tool, called, run.get("earlier_calls", [])):
        reused = record(same["result"], "done", called)
        reused["reused_from"] = same["id"]
        return {"executed_steps": [reused], "reused_calls": 1}
    call = {"type": "tool_call", "name": tool, "args": called, "id": f"step-{step['id']}"}
    effects = tools.effects[tool]

    def made(result: str, status: StepStatus) -> dict[str, Any]:
        done = record(result, status, called)
        if effects.read_only:
            done["read_only"], done["after"] = True, run.get("after", 0)
        else:
            done["acted"] = True
        return {"executed_steps": [done]}

    try:
        given: Any = [call]
        if "seal" in run:  # the call's `ToolNode` learns what it may do (`replan.graphs.seal`)
            given = {"messages": [AIMessage("", tool_calls=[call])], SEAL_KEY: run["seal"]}
        answer = yield Call(tools.node, given)
    except Exception as error:
        if not reports(error, tool_errors):
            raise
        return made(tool_error_text(tool, error), "failed")
    messages = answer.get("messages", []) if isinstance(answer, dict) else answer
    message = messages[-1] if messages else None
    if not isinstance(message, ToolMessage):
        return made(str(answer), "done")
    failed = message.status == "error" or says_error(message.text)
    return made(message.text, "failed" if failed else "done")
