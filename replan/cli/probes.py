"""What `replan check` asks a model server and how it reports what it found: the probes'
texts, names and outcomes, and the report's types (`Probe`, `Speed`, `Settings`,
`ServerReport`). Nothing here talks to a server: `replan.cli.server_check` asks the probes,
`replan.cli.server_verdict` turns their results into the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast, get_args

from replan.graphs.context import DecisionMode
from replan.graphs.model.decision_modes.registry import STRATEGIES

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
