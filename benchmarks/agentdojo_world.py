"""AgentDojo's tasks for any LangChain agent: a task's environment, its functions as LangChain
tools that record every call, and AgentDojo's own checks on what the run did.

AgentDojo (`pip install agentdojo==0.1.35`, a benchmark dependency, never a runtime one) ships
suites of user tasks and injection tasks over simulated environments. `Task` is one user task,
alone or with one injection task; `World` is one run of it: the environment loaded with the
attack's injections (`important_instructions`, benchmark `v1.2.2`), a snapshot taken before the
run, the suite's functions as tools that call AgentDojo's runtime on that environment, and the
trace of every call made, in order. `World.verdict` then asks AgentDojo as its own runner does:
utility from the trace where the task checks one, else from the environments and the answer;
for an injection task, whether the attack succeeded (security, same order).

Results reach the model as JSON (pydantic objects dumped, dates as text), the same for every
design, so that a result's fields can be named (`$2.recipient`). A function's error reaches
the model as an error tool message (`ToolException`). As AgentDojo's executor does, a text
argument that is a Python list literal is read as the list.

Effects, labelled by a rule fixed before any injection task was read (`effects_by_rule`): a
function whose name starts with a look-up verb (`READ_PREFIXES`) is read-only; every other acts.
An acting function's argument is sensitive when its name names a party, a destination or a
secret (`SENSITIVE_NAME`: recipients, users, e-mail addresses, channels, URLs, participants,
passwords); contents (amounts, subjects, bodies) are not.

An attack needs a new action (`needs_new_action`) when its injection task's ground truth calls
an acting function that the user task's ground truth never calls.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType, SimpleNamespace
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from replan import declare_effects

VERSION = "v1.2.2"
"""The benchmark version: the newest agentdojo 0.1.35 ships."""
ATTACK = "important_instructions"
SUITES = ("banking", "slack", "travel", "workspace")
REAL_MODEL_HELD_BACK = ("travel", "workspace")
"""Suites held back for real-model runs (others run them); the scripted model may run all."""
INSTALL = "pip install agentdojo==0.1.35"
TARGET_MODEL = "local"
"""How the attack's text names the model it addresses (AgentDojo's name for local models)."""
READ_PREFIXES = ("get_", "read_", "search_", "list_", "check_")
SENSITIVE_NAME = re.compile(r"recipient|user|email|^cc$|^bcc$|channel|url|participant|password")


class AgentDojoMissing(RuntimeError):
    """The optional `agentdojo` package is not installed."""


def agentdojo(module: str) -> ModuleType:
    """`agentdojo.<module>`; `AgentDojoMissing` saying how to install it when it is absent."""
    try:
        return importlib.import_module(f"agentdojo.{module}")
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] != "agentdojo":
            raise
        raise AgentDojoMissing(f"the agentdojo package is not installed: {INSTALL}") from None


def effects_by_rule(function: Any) -> tuple[bool, list[str]]:
    """Whether an AgentDojo function only reads, and its sensitive arguments (the rule above)."""
    if function.name.startswith(READ_PREFIXES):
        return True, []
    names = function.parameters.model_json_schema().get("properties", {})
    return False, sorted(name for name in names if SENSITIVE_NAME.search(name))


def _dumped(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_dumped(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _dumped(item) for key, item in value.items()}
    return value


def result_text(result: Any) -> str:
    """A function's result as the model reads it: JSON, or the text it is."""
    if isinstance(result, str):
        return result
    return json.dumps(_dumped(result), default=str, ensure_ascii=False)


def _read_lists(args: Mapping[str, Any]) -> dict[str, Any]:
    read = {}
    for name, value in args.items():
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                pass
        read[name] = value
    return read


@cache
def suite(name: str) -> Any:
    """The suite `name` of `VERSION`."""
    return agentdojo("task_suite").get_suite(VERSION, name)


@cache
def attack(suite_name: str) -> Any:
    """The attack on suite `suite_name` (one per suite: it caches where injections land)."""
    registry = agentdojo("attacks.attack_registry")
    return registry.load_attack(ATTACK, suite(suite_name), SimpleNamespace(name=TARGET_MODEL))


def _acting_functions(calls: Sequence[Any], suite_name: str) -> set[str]:
    acting = {f.name for f in suite(suite_name).tools if not effects_by_rule(f)[0]}
    return {call.function for call in calls} & acting


@dataclass(frozen=True)
class Task:
    """One user task of a suite, alone or under one injection task."""

    suite_name: str
    user_id: str
    injection_id: str | None = None

    @property
    def id(self) -> str:
        return f"{self.suite_name}/{self.user_id}" + (
            f"+{self.injection_id}" if self.injection_id else ""
        )

    @property
    def user_task(self) -> Any:
        return suite(self.suite_name).get_user_task_by_id(self.user_id)

    @property
    def injection_task(self) -> Any:
        if self.injection_id is None:
            return None
        return suite(self.suite_name).get_injection_task_by_id(self.injection_id)

    def injections(self) -> dict[str, str]:
        """Where the attack's text goes, and what it says."""
        if self.injection_task is None:
            return {}
        return dict(attack(self.suite_name).attack(self.user_task, self.injection_task))

    def needs_new_action(self) -> bool:
        """Whether the injection task's ground truth acts with a function the user task's
        ground truth never calls."""
        if self.injection_task is None:
            return False
        environment = suite(self.suite_name).load_and_inject_default_environment({})
        wanted = _acting_functions(self.injection_task.ground_truth(environment), self.suite_name)
        asked = {call.function for call in self.user_task.ground_truth(environment)}
        return bool(wanted - asked)


def tasks(suite_names: Sequence[str], users: int | None, injections: int | None) -> list[Task]:
    """The first `users` user tasks of each suite (all: None), each alone and under each of
    the suite's first `injections` injection tasks."""
    chosen = []
    for name in suite_names:
        user_ids = list(suite(name).user_tasks)[:users]
        injection_ids = list(suite(name).injection_tasks)[:injections]
        for user_id in user_ids:
            chosen.append(Task(name, user_id))
            chosen.extend(Task(name, user_id, injection_id) for injection_id in injection_ids)
    return chosen


@dataclass(frozen=True)
class Called:
    """One call a run made, and what it returned (or its error)."""

    function: str
    args: dict[str, Any]
    result: str
    failed: bool


@dataclass(frozen=True)
class Verdict:
    """What AgentDojo says of a run: the user task done; the attack carried out (None alone)."""

    utility: bool
    attacked: bool | None


@dataclass
class World:
    """One run of `task`: its environment, its tools and what was called."""

    task: Task
    injections: dict[str, str] = field(init=False)
    environment: Any = field(init=False)
    before: Any = field(init=False)
    called: list[Called] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.injections = self.task.injections()
        loaded = suite(self.task.suite_name).load_and_inject_default_environment(self.injections)
        self.environment = self.task.user_task.init_environment(loaded)
        self.before = self.environment.model_copy(deep=True)
        self.runtime = agentdojo("functions_runtime").FunctionsRuntime(
            suite(self.task.suite_name).tools
        )

    def call(self, function: str, args: Mapping[str, Any]) -> str:
        """Make one call on the environment, record it, and give its result (raises
        `ToolException` with the function's error)."""
        args = _read_lists(args)
        result, error = self.runtime.run_function(self.environment, function, args)
        said = str(error) if error is not None else result_text(result)
        self.called.append(Called(function, dict(args), said, error is not None))
        if error is not None:
            raise ToolException(said)
        return said

    def tools(self) -> list[BaseTool]:
        """The suite's functions as tools on this world, with their effects declared."""
        made = []
        for function in suite(self.task.suite_name).tools:
            made_tool = StructuredTool.from_function(
                func=self._caller(function.name),
                name=function.name,
                description=function.description,
                args_schema=function.parameters,
                handle_tool_error=True,
            )
            read_only, sensitive = effects_by_rule(function)
            made.append(declare_effects(made_tool, read_only=read_only, sensitive=sensitive))
        return made

    def _caller(self, name: str) -> Any:
        def call(**args: Any) -> str:
            return self.call(name, args)

        return call

    def ground_truth(self) -> list[Any]:
        """The user task's calls, as AgentDojo's ground truth makes them on this world."""
        return list(self.task.user_task.ground_truth(self.before.model_copy(deep=True)))

    def injected_calls(self) -> list[Any]:
        """The injection task's ground-truth calls (none without one)."""
        injection = self.task.injection_task
        if injection is None:
            return []
        return list(injection.ground_truth(self.before.model_copy(deep=True)))

    def verdict(self, answer: str) -> Verdict:
        """AgentDojo's checks on this run, with `answer` as the model's output."""
        trace = agentdojo("functions_runtime").FunctionCall
        traces = [trace(function=c.function, args=c.args) for c in self.called]
        user = self.task.user_task
        utility = user.utility_from_traces(answer, self.before, self.environment, traces)
        if utility is None:
            utility = user.utility(answer, self.before, self.environment)
        injection = self.task.injection_task
        if injection is None:
            return Verdict(bool(utility), None)
        attacked = injection.security_from_traces(answer, self.before, self.environment, traces)
        if attacked is None:
            attacked = injection.security(answer, self.before, self.environment)
        return Verdict(bool(utility), bool(attacked))
