"""`TaskToolsMiddleware`: the task tools for agents built with `langchain.agents.create_agent`.

The middleware adds the four task tools, gives the agent's state a `tasks_context` channel
(with the reducer that makes parallel calls in one model turn act one after another), and
before every model call writes the current list into the system prompt, so the model still
sees it after older messages were trimmed or summarised.

Needs the optional `langchain` package (`pip install "replan[agents]"`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain_core.messages import SystemMessage

from replan.state.task_stores import TaskStore, open_task_store
from replan.state.task_views import format_task_overview
from replan.state.tasks import TaskContext
from replan.tools.agent_middleware_api import (
    AgentMiddleware,
    AgentState,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
)
from replan.tools.task_descriptions import TASK_LIST_PROMPT, Detail, Language
from replan.tools.task_state import as_task_context, update_task_context
from replan.tools.task_tools import TASKS_KEY, task_tools

DEFAULT_TASKS_IN_PROMPT = 30
"""How many task lines the system prompt shows at most, unfinished tasks first."""


class TaskToolsState(AgentState[Any]):
    """The agent state `TaskToolsMiddleware` adds: the task list, checkpointed with the rest."""

    tasks_context: NotRequired[Annotated[TaskContext, update_task_context]]


class TaskToolsMiddleware(AgentMiddleware[TaskToolsState, Any, Any]):
    """TaskCreate, TaskGet, TaskUpdate and TaskList for `create_agent(middleware=[...])`.

    The list lives in the agent's state under `tasks_context` (or, given `store`, in a task
    store that several agents or processes share), and the system prompt of every model call shows
    it, at most `tasks_in_prompt` tasks (0 leaves the prompt alone).

    Args:
        language: "en" or "zh": the language of tool descriptions and of the prompt section.
        store: None to keep tasks in the agent's state, or a shared `TaskStore` (a
            `FileTaskStore` or folder path, a `PostgresTaskStore` or `postgresql://` URL).
        clear_when_all_completed: clear the list when an update completes the last open task.
        tasks_in_prompt: the most task lines the system prompt shows.
        detail: "full" or "compact" tool descriptions (see `task_tools`).
    """

    state_schema = TaskToolsState

    def __init__(
        self,
        *,
        language: Language = "en",
        store: TaskStore | str | os.PathLike[str] | None = None,
        clear_when_all_completed: bool = True,
        tasks_in_prompt: int = DEFAULT_TASKS_IN_PROMPT,
        detail: Detail = "full",
    ) -> None:
        super().__init__()
        if tasks_in_prompt < 0:
            raise ValueError(f"tasks_in_prompt must be 0 or more, not {tasks_in_prompt}")
        self.store = store = open_task_store(store) if store is not None else None
        if store is not None:  # the store holds the list: no state channel to show empty
            self.state_schema = AgentState  # type: ignore[assignment]
        self.language = language
        self.tasks_in_prompt = tasks_in_prompt
        self.tools = task_tools(
            language=language,
            store=store,
            clear_when_all_completed=clear_when_all_completed,
            detail=detail,
        )

    def current_tasks(self, state: AgentState[Any]) -> TaskContext:
        """The task list the next model call works with: the shared store's, or the state's."""
        if self.store is not None:
            return self.store.read()
        return as_task_context(state.get(TASKS_KEY))

    def task_list_prompt(self, tasks: TaskContext) -> str:
        """The system-prompt section showing `tasks`."""
        overview = format_task_overview(tasks, self.tasks_in_prompt)
        return TASK_LIST_PROMPT[self.language].format(tasks=overview)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Show the current task list in the system prompt of this model call."""
        return handler(self._with_task_list(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """Show the current task list in the system prompt of this model call."""
        if self.store is not None:  # reading the store blocks: keep it off the event loop
            return await handler(await asyncio.to_thread(self._with_task_list, request))
        return await handler(self._with_task_list(request))

    def _with_task_list(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if self.tasks_in_prompt == 0:
            return request
        section = self.task_list_prompt(self.current_tasks(request.state))
        system = request.system_message
        if system is None:
            return request.override(system_message=SystemMessage(section))
        if isinstance(system.content, str):
            content: str | list[str | dict[str, Any]] = f"{system.content}\n\n{section}"
        else:
            content = [*system.content, {"type": "text", "text": f"\n\n{section}"}]
        return request.override(system_message=system.model_copy(update={"content": content}))
