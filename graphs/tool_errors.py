"""What an exception raised by one of the run's own tools does (`Context.tool_errors`).

With "report" (the default) it becomes that call's error result: one line naming the tool and
the error, no traceback. The executor's model reads it and may try another way; a tool step
fails with it, so the replanner can retry or report. With "raise" it ends the run, as a bare
`ToolNode` would. A tool's `interrupt` always pauses the run, and replan's own task tools are
left as they are (their errors, such as a shared task list out of reach, stop the run).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, cast

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from replan.graphs.context import Context, ToolErrorsChoice
from replan.graphs.durable_calls import durable_tool_node

try:
    from langgraph.errors import is_invalid_resume
except ImportError:  # a langgraph before `interrupt(response_schema=...)` has no such errors

    def is_invalid_resume(error: BaseException) -> bool:
        """Never: this langgraph raises no resume validation errors."""
        return False


MAX_ERROR_CHARS = 500
"""Most characters of an error's own message in a tool's error result."""

Answer = ToolMessage | Command[Any]


def tool_error_text(tool: str, error: Exception) -> str:
    """The error result of a call of `tool` that raised `error`, in one line: a `ToolException`
    (a message its tool wrote for the model) as it is, after `Error: `; any other exception
    with the tool's name and the error's type."""
    said = " ".join(str(error).split())
    if len(said) > MAX_ERROR_CHARS:
        said = said[: MAX_ERROR_CHARS - 1] + "…"
    if isinstance(error, ToolException):
        said = said or f"`{tool}` failed"
        return said if said.startswith("Error") else f"Error: {said}"
    said = f"{type(error).__name__}: {said}" if said else type(error).__name__
    return f"Error: the tool `{tool}` failed: {said}"


def reports(error: Exception, setting: ToolErrorsChoice) -> bool:
    """Whether `error`, raised by one of the run's tools, becomes its call's result under
    `setting` (never an interrupt, nor a resume value its `interrupt` refused)."""
    bubbles = isinstance(error, GraphBubbleUp) or is_invalid_resume(error)
    return setting == "report" and not bubbles


class _Reporting:
    """`ToolNode` wrappers answering a call of one of the `own` tools that raised with its
    error result, when the run's `Context` (the runtime context) says "report"."""

    def __init__(self, own: Collection[str]) -> None:
        self.own = frozenset(own)

    def reported(self, request: ToolCallRequest, error: Exception) -> ToolMessage | None:
        call = request.tool_call
        context = cast(Context, request.runtime.context)  # the run's, bound by the executor
        if call["name"] not in self.own or not reports(error, context.tool_errors):
            return None
        text = tool_error_text(call["name"], error)
        return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")

    def wrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Answer]
    ) -> Answer:
        try:
            return execute(request)
        except Exception as error:
            if (answer := self.reported(request, error)) is None:
                raise
            return answer

    async def awrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Answer]]
    ) -> Answer:
        try:
            return await execute(request)
        except Exception as error:
            if (answer := self.reported(request, error)) is None:
                raise
            return answer


def tool_node(tools: Sequence[BaseTool], own: Collection[str]) -> ToolNode:
    """A `ToolNode` over `tools` whose calls are made once (`replan.graphs.durable_calls`) and
    whose calls of the `own` tools follow the run's `Context.tool_errors` (read from the
    runtime context)."""
    reporting = _Reporting(own)
    return durable_tool_node(tools, reporting.wrap, reporting.awrap)
