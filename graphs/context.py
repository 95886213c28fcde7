"""Runtime settings of the plan–execute graph, passed per run with `context=`.

Everything a run may change lives here, so Studio, the SDK and the CLI can set it per run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypeVar, get_args

from replan.graphs.setting_checks import check_choice, check_count, check_prices

DEFAULT_MODEL = "gpt-4o-mini"
OPENAI_HOST = "api.openai.com"
OPENAI_API_URL = f"https://{OPENAI_HOST}/v1"
"""Where a run without a `base_url` sends its requests (the environment is read once, when its
`Context` is made, not when it resumes)."""
DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_EXECUTOR_MAX_STEPS = 20
DEFAULT_MISTAKE_RETRIES = 2
DEFAULT_DECISION_MAX_TOKENS = 1024
"""Reply limit of a planner or replanner decision (at 10 tokens/s, well within the timeout)."""
DEFAULT_EXECUTOR_MAX_TOKENS = 2048
"""Reply limit of one executor turn: a tool call or the step's report."""
MAX_REPLY_TOKENS = 1_000_000
"""Largest accepted reply limit (no model writes that much in one reply)."""
MAX_BOUND = 1000
"""Largest accepted `max_iterations` / `executor_max_steps` (the recursion limits' size)."""
DEFAULT_MAX_PLAN_STEPS = 12
"""Most steps one plan may list: the plan schema's `maxItems`, where a grammar (llama-server,
Ollama) stops a small model repeating steps; the replanner plans the rest."""
DEFAULT_MAX_CONCURRENCY = 8
MAX_CONCURRENCY = 64  # largest accepted `max_concurrency`; sizes the sync thread pool

ReplanMode = Literal["each_wave", "when_needed"]
REPLAN_MODES: tuple[str, ...] = get_args(ReplanMode)
TaskToolsChoice = Literal["full", "compact", "none"]
TASK_TOOLS_CHOICES: tuple[TaskToolsChoice, ...] = get_args(TaskToolsChoice)
DEFAULT_TASK_TOOLS: TaskToolsChoice = "none"
"""The task tools of a run that does not choose, in a graph without a shared task store: none (a
small model offered them uses them in steps that have nothing to do with a task list)."""
SHARED_STORE_TASK_TOOLS: TaskToolsChoice = "compact"
"""The task tools of a run that does not choose, in a graph built with a shared `task_store`."""
ToolStepsChoice = Literal["auto", "off"]
TOOL_STEPS_CHOICES: tuple[ToolStepsChoice, ...] = get_args(ToolStepsChoice)
"""Whether plans may hold tool steps (`replan.graphs.plan.tool_steps`): "auto" offers them whenever
the run has tools of its own, "off" never does."""
ToolErrorsChoice = Literal["report", "raise"]
TOOL_ERRORS_CHOICES: tuple[ToolErrorsChoice, ...] = get_args(ToolErrorsChoice)
"""What an exception raised by one of the run's own tools does (`replan.graphs.tool_errors`):
"report" makes it the call's error result, "raise" ends the run with it."""
InFlightChoice = Literal["ask", "fail"]  # `Context.in_flight_calls`
IN_FLIGHT_CHOICES: tuple[InFlightChoice, ...] = get_args(InFlightChoice)
PlanIntegrity = Literal["open", "sealed"]  # `Context.plan_integrity`
PLAN_INTEGRITIES: tuple[PlanIntegrity, ...] = get_args(PlanIntegrity)
SealedCallChoice = Literal["ask", "refuse"]  # `Context.sealed_calls`
SEALED_CALL_CHOICES: tuple[SealedCallChoice, ...] = get_args(SealedCallChoice)
AnswerMode = Literal["plain", "decision"]
ANSWER_MODES: tuple[AnswerMode, ...] = get_args(AnswerMode)
DEFAULT_ANSWER: AnswerMode = "decision"
"""How a run's final answer is written once the replanner decides to respond: by a plain model
request from the objective and the results ("plain"), or inside the `respond` decision."""
DecisionMode = Literal["tool_required", "tool_named", "json_schema", "json_object"]
DECISION_MODES: tuple[DecisionMode, ...] = get_args(DecisionMode)
"""How the planner and replanner ask for a decision, in the order a run falls back through them
when the model server refuses one. Each is a strategy in its own module of
`replan.graphs.model.decision_modes`, named as the mode: adding a mode is adding its module and
its name here."""


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name) or default


C = TypeVar("C")


def _records_given_fields(cls: type[C]) -> type[C]:
    """`cls` (a dataclass) whose instances remember which fields their caller gave (`given`):
    a run's settings are its saved ones with only those fields changed (`run_context`)."""
    generated: Callable[..., None] = cls.__init__  # type: ignore[misc]

    def __init__(self: Any, **values: Any) -> None:
        generated(self, **values)
        self._given = frozenset(values)

    cls.__init__ = __init__  # type: ignore[method-assign,misc]
    return cls


@_records_given_fields
@dataclass(kw_only=True)
class Context:
    """How to reach the chat model, how far a run may go, how many steps run at once, when the
    replanner is asked, whether a human approves the plan, and which task tools the executor has.

    Model settings apply only when the graph builds its own `ChatOpenAI` (no `model=` was given
    to `build_plan_execute_graph`). Unset model fields default from the environment; unset
    bounds (None) take the values the graph was built with.
    """

    model: str = field(
        default_factory=lambda: _env("REPLAN_MODEL", DEFAULT_MODEL) or DEFAULT_MODEL,
        metadata={
            "description": "Name of the chat model on the OpenAI-compatible server "
            "(environment: REPLAN_MODEL)."
        },
    )
    temperature: float = field(
        default=0.0,
        metadata={"description": "Sampling temperature of the model."},
    )
    base_url: str | None = field(
        default_factory=lambda: _env("OPENAI_BASE_URL"),
        metadata={
            "description": "Base URL of an OpenAI-compatible API such as vLLM, Ollama or "
            f"llama.cpp; empty means {OPENAI_HOST} (environment: OPENAI_BASE_URL)."
        },
    )
    max_retries: int = field(
        default=3,
        metadata={
            "description": "How many times a failed model request (HTTP 429, 5xx, timeouts) "
            "is retried, with exponential backoff."
        },
    )
    timeout: float | None = field(
        default=DEFAULT_TIMEOUT_SECONDS,
        metadata={"description": "Seconds to wait for one model request; empty means no limit."},
    )
    decision_max_tokens: int = field(
        default=DEFAULT_DECISION_MAX_TOKENS,
        metadata={
            "description": "Most tokens in one reply of the planner or the replanner; a reply "
            "cut off there is corrected and asked for again, like any unusable decision."
        },
    )
    executor_max_tokens: int = field(
        default=DEFAULT_EXECUTOR_MAX_TOKENS,
        metadata={
            "description": "Most tokens in one reply of the executor; a reply cut off there ends "
            "its step as unfinished, with what it had written."
        },
    )
    approve_plan: bool = field(
        default=False,
        metadata={
            "description": "Pause after planning so a human can approve, edit or reject the plan."
        },
    )
    max_iterations: int | None = field(
        default=None,
        metadata={
            "description": "Most execute→replan rounds; past it the run ends saying it did not "
            f"finish. Empty: the graph's default ({DEFAULT_MAX_ITERATIONS} unless built "
            f"otherwise). At most {MAX_BOUND}."
        },
    )
    executor_max_steps: int | None = field(
        default=None,
        metadata={
            "description": "Most model calls the executor makes for one step; past it the step "
            f"is recorded as unfinished. Empty: the graph's default "
            f"({DEFAULT_EXECUTOR_MAX_STEPS}). At most {MAX_BOUND}."
        },
    )
    mistake_retries: int | None = field(
        default=None,
        metadata={
            "description": "How often the planner and replanner re-ask a model whose reply had "
            f"no usable decision. Empty: the graph's default ({DEFAULT_MISTAKE_RETRIES})."
        },
    )
    max_plan_steps: int = field(
        default=DEFAULT_MAX_PLAN_STEPS,
        metadata={
            "description": "Most steps one plan (the planner's or a replan) may list; a longer "
            "one is corrected, and the replanner plans the rest later. Sent as the plan "
            f"schema's maxItems. At most {MAX_BOUND}."
        },
    )
    max_concurrency: int = field(
        default=DEFAULT_MAX_CONCURRENCY,
        metadata={
            "description": "Most plan steps carried out at the same time; the runnable steps "
            f"beyond it wait for the next wave. 1 to {MAX_CONCURRENCY}."
        },
    )
    replan: ReplanMode = field(
        default="each_wave",
        metadata={
            "description": "When the replanner asks the model: 'each_wave' after every wave of "
            "steps, or 'when_needed' only once no step can run, a step came back unfinished "
            "or failed, or max_iterations is reached."
        },
    )
    task_tools: TaskToolsChoice | None = field(
        default=None,
        metadata={
            "description": "How the executor is offered the four task tools: 'compact' (short "
            "descriptions), 'full' (long ones, with advice on planning with tasks: about twice "
            "the prompt), or 'none' (left out). Empty: 'compact' in a graph whose task tools "
            f"share a task store, else '{DEFAULT_TASK_TOOLS}'."
        },
    )

    tool_steps: ToolStepsChoice = field(
        default="auto",
        metadata={
            "description": "Whether a plan may call the run's own tools directly as tool steps "
            '({"tool": NAME, "args": {...}}, run with no model call): \'auto\' offers them '
            "whenever the run has tools of its own (the task tools are never tool steps), "
            "'off' never does."
        },
    )

    tool_errors: ToolErrorsChoice = field(
        default="report",
        metadata={
            "description": "What an exception raised by one of the run's own tools does: "
            "'report' makes it that call's error result, one line naming the tool and the "
            "error, which the model reads (a tool step fails with it) and the replanner can "
            "work around; 'raise' ends the run with it (fail fast). A tool's `interrupt` "
            "always pauses the run."
        },
    )

    in_flight_calls: InFlightChoice = field(
        default="ask",
        metadata={
            "description": (
                "A call in flight when the run stopped, of a tool not declared safe to retry "
                "(replan.graphs.durable_calls): 'ask' pauses for a person, 'fail' fails the call."
            )
        },
    )

    plan_integrity: PlanIntegrity = field(
        default="open",
        metadata={
            "description": "'sealed': the first plan of a turn declares the actions the turn "
            "may take (its tool steps, and the tools each text step may use); a call of an "
            "acting tool not declared, or with a sensitive argument that may come from a "
            "tool's result, is held (docs/sealed-plans.md). 'open': no such check."
        },
    )

    sealed_calls: SealedCallChoice = field(
        default="ask",
        metadata={
            "description": "In a sealed run, a held call: 'ask' pauses for a person (approve, "
            "edit, respond or reject), 'refuse' fails the call saying why."
        },
    )

    recover_text_calls: bool = field(
        default=True,
        metadata={
            "description": "Read tool calls that the model wrote as text (a JSON object with "
            "`name` and `arguments` in a ``` fence, between <tool_call> tags or bare), as some "
            "local servers return them, and run them as tool calls."
        },
    )

    decision_mode: DecisionMode = field(
        default="tool_required",
        metadata={
            "description": "How the planner and replanner ask the model for their decision: "
            "'tool_required' (tool_choice forces a call of `plan` or `respond`), 'tool_named' "
            "(one tool, `decide`, forced by name), 'json_schema' (response_format with a JSON "
            "schema) or 'json_object' (llama-cpp-python's json_object with a schema). A mode "
            "the server refuses falls back to the next one for the rest of the run."
        },
    )

    answer: AnswerMode = field(
        default=DEFAULT_ANSWER,
        metadata={
            "description": "How the final answer is written once the replanner decides to "
            "respond: 'plain' (a plain-text model request, no tools and no response_format, "
            "from the objective and the step results) or 'decision' (the text of the `respond` "
            "decision itself)."
        },
    )

    price_in: float | None = field(
        default=None,
        metadata={
            "description": "Dollars per million input tokens, to estimate the run's cost "
            f"(with price_out). Empty: OpenAI's list price for known models on {OPENAI_HOST}, "
            "else no cost estimate. Cached input tokens cost the same at a given price."
        },
    )
    price_out: float | None = field(
        default=None,
        metadata={"description": "Dollars per million output tokens (with price_in)."},
    )

    def __post_init__(self) -> None:
        """Refuse settings no run could use, with a message naming the field."""
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be a whole number, not {self.max_retries!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"timeout must be more than 0 seconds, not {self.timeout}")
        for name in ("decision_max_tokens", "executor_max_tokens"):
            check_count(name, getattr(self, name), minimum=1, maximum=MAX_REPLY_TOKENS)
        for name, minimum in (("max_iterations", 1), ("executor_max_steps", 1)):
            if (value := getattr(self, name)) is not None:
                check_count(name, value, minimum=minimum, maximum=MAX_BOUND)
        if self.mistake_retries is not None:
            check_count("mistake_retries", self.mistake_retries, minimum=0, maximum=MAX_BOUND)
        check_count("max_plan_steps", self.max_plan_steps, minimum=1, maximum=MAX_BOUND)
        if not isinstance(self.recover_text_calls, bool):
            raise ValueError(
                f"recover_text_calls must be true or false, not {self.recover_text_calls!r}"
            )
        check_count("max_concurrency", self.max_concurrency, minimum=1, maximum=MAX_CONCURRENCY)
        check_choice("replan", self.replan, REPLAN_MODES)
        if self.task_tools is not None:
            check_choice("task_tools", self.task_tools, TASK_TOOLS_CHOICES)
        check_choice("tool_steps", self.tool_steps, TOOL_STEPS_CHOICES)
        check_choice("tool_errors", self.tool_errors, TOOL_ERRORS_CHOICES)
        check_choice("in_flight_calls", self.in_flight_calls, IN_FLIGHT_CHOICES)
        check_choice("plan_integrity", self.plan_integrity, PLAN_INTEGRITIES)
        check_choice("sealed_calls", self.sealed_calls, SEALED_CALL_CHOICES)
        check_choice("decision_mode", self.decision_mode, DECISION_MODES)
        check_choice("answer", self.answer, ANSWER_MODES)
        check_prices(self.price_in, self.price_out)

    @property
    def given(self) -> frozenset[str]:
        """The fields the caller gave (the others took their defaults)."""
        given: frozenset[str] = getattr(self, "_given", frozenset())
        return given

    def settings(self) -> dict[str, Any]:
        """The fields as plain values (no secrets live here), e.g. to store with a run."""
        return asdict(self)


SETTING_NAMES = frozenset(f.name for f in fields(Context))
"""The names of `Context`'s settings."""


def settled(saved: Mapping[str, Any] | None, changes: Mapping[str, Any]) -> Context:
    """A run's settings: those it `saved` (the `settings` state channel; None before its first
    node), with `changes` applied (fields given now); ValueError naming a field no run could
    use. What is not a setting of the run (a saved copy's extra keys) is left out."""
    values = {name: value for name, value in (saved or {}).items() if name in SETTING_NAMES}
    return Context(**{**values, **changes})


def run_context(given: Context | None, saved: Mapping[str, Any] | None) -> Context:
    """The settings a node of a run works with: `settled` from the run's `saved` settings and
    the fields the caller `given` now gave; without saved settings (a run's first node), the
    caller's context, or one of defaults (read from the environment here, once per run)."""
    if saved is None:
        return given if given is not None else Context()
    changes = {} if given is None else {name: getattr(given, name) for name in given.given}
    return settled(saved, changes)


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """The bounds a run obeys: the run's `Context` fields where set, else the graph's."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    executor_max_steps: int = DEFAULT_EXECUTOR_MAX_STEPS
    mistake_retries: int = DEFAULT_MISTAKE_RETRIES

    def __post_init__(self) -> None:
        check_count("max_iterations", self.max_iterations, minimum=1, maximum=MAX_BOUND)
        check_count("executor_max_steps", self.executor_max_steps, minimum=1, maximum=MAX_BOUND)
        check_count("mistake_retries", self.mistake_retries, minimum=0, maximum=MAX_BOUND)

    def for_run(self, context: Context | None) -> Bounds:
        """These bounds with the run's own settings applied."""
        if context is None:
            return self
        return Bounds(
            max_iterations=context.max_iterations or self.max_iterations,
            executor_max_steps=context.executor_max_steps or self.executor_max_steps,
            mistake_retries=(
                self.mistake_retries if context.mistake_retries is None else context.mistake_retries
            ),
        )
