"""BFCL multi-turn: replan next to a plain ReAct agent and the plan-and-execute tutorial, on
conversations and checks that nobody here wrote.

The Berkeley Function Calling Leaderboard's `multi_turn_base` entries (from the `bfcl-eval`
package: an optional benchmark dependency, `pip install --no-deps bfcl-eval mpmath`, never a
runtime one) each hold user turns, the initial state of executable Python APIs (file system,
trading, travel, vehicle, tickets, messages, posts, math) and the calls that fulfil each turn.
For every chosen entry and design this script:

1. loads the entry's APIs from its initial configuration, as BFCL does;
2. offers every public method of the involved classes as a tool, with the entry's function
   documents as schemas (converted to OpenAI's types the way BFCL converts them for OpenAI
   models; the documents' `response` part is not sent, as an OpenAI chat request has no field
   for it);
3. feeds the user turns one after the other on one thread, and records every call the tools
   ran, per turn, in the order they ran (concurrent calls are serialised, so BFCL replays them
   in the same order);
4. scores the recorded calls with BFCL's own `multi_turn_checker`, which replays them on fresh
   instances and compares, after each turn, the APIs' state and the results the calls returned
   with those of the ground truth; and scores the turns: the turns passed are the longest
   prefix of turns the checker accepts (turns 1..k against the ground truth's first k turns,
   k the largest for which every prefix up to it is accepted; a stopped turn never counts).

The designs (`--design`), all with the same tools (only the entry's: replan runs with
`task_tools="none"`, since the baselines have no task tools), the same server and model, the
same per-request timeout, retries and reply-token bounds (planner and replanner decisions:
`--decision-max-tokens`; executor and agent turns: `--executor-max-tokens`), the same rounds
(`--max-iterations`) and model calls per step or turn (`--executor-max-steps`, 20 by default,
BFCL's own step limit per turn), the same time limit per turn (`--timeout`):

- replan: `build_plan_execute_graph(tools=...)` with its defaults, invoked once per user turn
  on one thread (`{"messages": [turn]}`);
- tutorial: LangGraph's plan-and-execute tutorial (`benchmarks/tutorial.py`), once per user turn
  on one thread, the conversation in its `messages` (see that module);
- react: a plain ReAct agent (`benchmarks/react.py`, `langchain.agents.create_agent`), each turn
  appended to its thread;
- react+recovery: the same agent, built the same way, with replan's `TextCallRecoveryMiddleware`,
  which runs the calls a model wrote as text (it changes nothing the model is sent): what
  recovering such calls adds, measured apart from what planning adds.

Conversation context: every design is given every earlier user turn on its thread; the
tutorial's planner also sees the answers it gave, and the ReAct agent sees its whole message
history (its own tool calls and results too), as each design keeps it.

A turn that raises, times out, or ends with a stop reason (replan's `stop_reason`, a recursion
limit) ends its entry, which fails, as BFCL fails an entry whose model was forced to quit.

Every model request goes through a metering proxy on 127.0.0.1, the same for every design: it
counts model calls and reads each reply's usage: input and output tokens, cached prompt tokens
(`usage.prompt_tokens_details.cached_tokens`) and llama-server's `timings` (`prompt_n`: the
prompt tokens the server really processed; a cached prefix is not processed again). Processed
tokens are taken from `timings`, else input minus cached, else the input as sent (column
`from` says which); unknown when a reply reported no usage.

Entries: `multi_turn_base` 0–99 are for development (tune prompts and heuristics only on
these); 100–199 are held back. `--list` ranks a pool's entries by turns and by the size of the
involved classes' function documents, to pick the shortest; `--shortest N`, `--entries LIST`
or `--sample N [--seed S]` choose (the seed is printed). Without `--base-url` the script runs
against the scripted OpenAI-compatible server with a scripted model that makes the ground
truth's calls one per reply (a smoke test of the whole path, not a measurement).

The table gives per entry and design, then per design and split (development, held back, all):
entries passed, turns passed, model calls (also per turn run) and API calls per turn run,
tokens and wall time; `--json` writes the rows with the same figures.

Run: python benchmarks/bfcl_multi_turn.py [--base-url URL --model M] [--design NAME]...
     [--entries LIST | --sample N [--seed S] | --shortest N] [--pool dev|held-back|all]
     [--list] [--timeout S] [--request-timeout S] [--json FILE]
Progress goes to stderr, the table to stdout. Exit codes: 0 every entry passed, 1 some entry
failed, 2 bad usage (one line on stderr).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import copy
import importlib
import inspect
import json
import os
import random
import re
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cached_property, partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`

from benchmarks.command_line import Parser, positive  # noqa: E402
from benchmarks.react import react_agent, react_config  # noqa: E402
from benchmarks.text_table import table_line  # noqa: E402
from benchmarks.tutorial import (  # noqa: E402
    baseline_chat_model,
    tutorial_decision,
    tutorial_graph,
    tutorial_turn,
)
from replan import (  # noqa: E402
    Context,
    TextCallRecoveryMiddleware,
    build_plan_execute_graph,
    checkpoint_serializer,
)
from replan.graphs.plan.provenance import NOT_CALLED  # noqa: E402
from replan.testing import (  # noqa: E402
    MODEL_ID,
    Reply,
    Responder,
    ScriptedOpenAIServer,
    text,
    tool_call,
)
from replan.testing.background import BackgroundServer  # noqa: E402
from replan.testing.plan_script import classify  # noqa: E402
from replan.testing.requests import (  # noqa: E402
    first_param,
    message_text,
    prompt_text,
    step_tools,
)

CATEGORY = "multi_turn_base"
DATA_FILE = "BFCL_v4_multi_turn_base.json"
INSTALL = "pip install --no-deps bfcl-eval mpmath"
DEV = range(0, 100)
HELD_BACK = range(100, 200)
POOLS = {"dev": DEV, "held-back": HELD_BACK, "all": range(0, 200)}
DESIGNS = ("replan", "tutorial", "react", "react+recovery")
THREAD = "bfcl"
ERROR_PREFIX = "Error during execution: "
"""How BFCL's executor reports a call that raised (the model sees the same text)."""
TEXT_CHARS = 300
"""How much of an answer or an error a row keeps."""

_CONTEXT_DEFAULTS = Context(model=MODEL_ID, base_url=None)
DECISION_MAX_TOKENS = _CONTEXT_DEFAULTS.decision_max_tokens
EXECUTOR_MAX_TOKENS = _CONTEXT_DEFAULTS.executor_max_tokens
MAX_ITERATIONS = 8
EXECUTOR_MAX_STEPS = 20
"""Most model calls for one step (replan's executor, the tutorial's agent) or one turn (the
ReAct agent): BFCL's own limit of steps per turn."""
REQUEST_TIMEOUT = 600.0
TURN_TIMEOUT = 1800.0
RETRIES = 1


class BfclMissing(RuntimeError):
    """The optional `bfcl-eval` package is not installed."""


def bfcl() -> ModuleType:
    """The `bfcl_eval` package; `BfclMissing` saying how to install it when it is absent."""
    try:
        return importlib.import_module("bfcl_eval")
    except ImportError:
        raise BfclMissing(f"the bfcl-eval package is not installed: {INSTALL}") from None


def _data_dir() -> Path:
    return Path(str(bfcl().__file__)).resolve().parent / "data"


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _backend() -> ModuleType:
    """BFCL's map of API classes to modules and function-document files (no other imports)."""
    return importlib.import_module("bfcl_eval.constants.executable_backend_config")


# --- entries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One BFCL multi-turn entry with its ground truth and the function documents offered."""

    raw: dict[str, Any]
    ground_truth: list[list[str]]
    docs: list[dict[str, Any]]

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def index(self) -> int:
        return int(self.id.rsplit("_", 1)[1])

    @property
    def split(self) -> str:
        """ "dev" (entries 0–99, for tuning) or "held-back" (100–199)."""
        return "dev" if self.index in DEV else "held-back"

    @property
    def classes(self) -> list[str]:
        return list(self.raw["involved_classes"])

    @property
    def turns(self) -> list[str]:
        """Each user turn's text (a turn's user messages joined)."""
        return [
            "\n".join(str(m["content"]) for m in turn if m.get("role") == "user")
            for turn in self.raw["question"]
        ]

    @property
    def doc_chars(self) -> int:
        """The size of the function documents offered, in JSON characters."""
        return len(json.dumps(self.docs))

    @property
    def answer_calls(self) -> int:
        return sum(len(turn) for turn in self.ground_truth)


def load_entries() -> list[Entry]:
    """Every `multi_turn_base` entry, in order, with the function documents of its classes
    (all of them, as BFCL's own loader offers them)."""
    data = _data_dir()
    answers = {
        a["id"]: a["ground_truth"] for a in _json_lines(data / "possible_answer" / DATA_FILE)
    }
    files = _backend().MULTI_TURN_FUNC_DOC_FILE_MAPPING
    docs = {
        name: _json_lines(data / "multi_turn_func_doc" / file_name)
        for name, file_name in files.items()
    }
    return [
        Entry(raw, answers[raw["id"]], [d for c in raw["involved_classes"] for d in docs[c]])
        for raw in _json_lines(data / DATA_FILE)
    ]


def ranked(entries: Sequence[Entry], pool: range) -> list[Entry]:
    """The entries of `pool`, fewest turns first, then shortest function documents."""
    return sorted(
        (e for e in entries if e.index in pool), key=lambda e: (len(e.turns), e.doc_chars, e.index)
    )


def parse_entries(text: str) -> list[int]:
    """Entry numbers from `3,7,10-12` or `multi_turn_base_3`; ValueError for anything else."""
    numbers: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        part = part.removeprefix(f"{CATEGORY}_")
        low, dash, high = part.partition("-")
        if not (low.isdigit() and (not dash or high.isdigit())):
            raise ValueError(f"not an entry number or range: {part!r}")
        span = range(int(low), int(high if dash else low) + 1)
        if not span or span.stop > POOLS["all"].stop:
            raise ValueError(f"entries run from 0 to {POOLS['all'].stop - 1}, not {part!r}")
        numbers.extend(span)
    if not numbers:
        raise ValueError("no entry given")
    return list(dict.fromkeys(numbers))


def sample(pool: range, count: int, seed: int) -> list[int]:
    """`count` entry numbers drawn from `pool` with `seed`, in order."""
    return sorted(random.Random(seed).sample(list(pool), min(count, len(pool))))


# --- the entry's APIs as tools --------------------------------------------------------------


def openai_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function document's parameters as an OpenAI JSON schema, converted as BFCL
    converts them for OpenAI models (`dict` → `object`, `float` → `number` with "This is a
    float type value." added to its description, unknown types → `string`)."""
    mapping = importlib.import_module("bfcl_eval.constants.type_mappings").GORILLA_TO_OPENAPI
    schema = copy.deepcopy(parameters)
    schema["type"] = "object"
    schema["properties"] = _openai_properties(schema.get("properties", {}), mapping)
    return schema


def _openai_properties(properties: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    for prop in properties.values():
        kind = prop.get("type", "string")
        if kind == "float":
            prop["format"] = "float"
            prop["description"] = prop.get("description", "") + " This is a float type value."
        prop["type"] = mapping.get(kind, "string")
        if prop["type"] in ("array", "object"):
            if "properties" in prop:
                prop["properties"] = _openai_properties(prop["properties"], mapping)
            elif "items" in prop:
                items = prop["items"]
                items["type"] = mapping.get(items.get("type", "string"), "string")
                if items["type"] == "object" and "properties" in items:
                    items["properties"] = _openai_properties(items["properties"], mapping)
                elif items["type"] == "array" and "items" in items:
                    inner = items["items"]
                    inner["type"] = mapping.get(inner.get("type", "string"), "string")
    return properties


def call_text(name: str, args: dict[str, Any]) -> str:
    """A call as BFCL writes a decoded one: `mv(source='a',destination='b')`."""
    return f"{name}({','.join(f'{key}={value!r}' for key, value in args.items())})"


def result_text(value: Any) -> str:
    """A method's return value as BFCL's executor turns it into text."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class ApiSession:
    """The entry's API instances, loaded from its initial configuration, as tools that record
    every call they run per turn (`turn` is the turn now being fed)."""

    def __init__(self, entry: Entry) -> None:
        backend = _backend()
        self.entry = entry
        self.instances: dict[str, Any] = {}
        for name in entry.classes:
            module = importlib.import_module(backend.CLASS_FILE_PATH_MAPPING[name])
            instance = getattr(module, name)()
            if name not in backend.STATELESS_CLASSES:
                config = copy.deepcopy(entry.raw["initial_config"].get(name, {}))
                instance._load_scenario(config, long_context=False)
            self.instances[name] = instance
        self.turn = 0
        self.calls: list[list[str]] = [[] for _ in entry.turns]
        self._lock = threading.Lock()

    def owner(self, method: str) -> Any:
        """The instance whose public method `method` is (the last class that has it, as BFCL's
        executor maps names)."""
        found = [i for i in self.instances.values() if callable(getattr(i, method, None))]
        if not found or method.startswith("_"):
            raise KeyError(f"no API method {method!r}")
        return found[-1]

    def call(self, method: str, args: dict[str, Any]) -> str:
        """Record and run one call; an exception becomes BFCL's error text."""
        with self._lock:
            self.calls[self.turn].append(call_text(method, args))
            try:
                return result_text(getattr(self.owner(method), method)(**args))
            except Exception as error:  # the API's own refusals: the model reads them
                return f"{ERROR_PREFIX}{error}"

    def tools(self) -> list[BaseTool]:
        """One tool per function document, its schema converted for OpenAI."""
        return [self._tool(doc) for doc in self.entry.docs]

    def _tool(self, doc: dict[str, Any]) -> BaseTool:
        name = str(doc["name"])

        def run(**args: Any) -> str:
            return self.call(name, args)

        return StructuredTool(
            name=name,
            description=str(doc.get("description", "")),
            args_schema=openai_parameters(doc.get("parameters", {})),
            func=run,
        )


# --- BFCL's checker -----------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What BFCL's checker says of an entry's calls (or why it was not asked)."""

    passed: bool
    error_type: str = ""
    error: str = ""


def score(entry: Entry, calls: Sequence[Sequence[str]]) -> Verdict:
    """BFCL's `multi_turn_checker` on the calls of every turn."""
    if len(calls) != len(entry.ground_truth):
        return Verdict(False, "harness:turns", f"{len(calls)} turns of calls for {entry.id}")
    return _checked(entry, calls)


def turns_passed(entry: Entry, calls: Sequence[Sequence[str]]) -> int:
    """The longest k for which the checker accepts the calls of turns 1..k against the ground
    truth's first k turns, and every shorter prefix too (`calls`: the turns that ended)."""
    for ended in range(1, len(calls) + 1):
        if not _checked(entry, calls[:ended]).passed:
            return ended - 1
    return len(calls)


def _checked(entry: Entry, calls: Sequence[Sequence[str]]) -> Verdict:
    """BFCL's `multi_turn_checker` on the calls of the entry's first `len(calls)` turns (each
    call one step: the checker adds a turn's steps up). It caches API instances in its module
    by model name, so each scoring has a name of its own, and its instances are dropped
    afterwards."""
    checker = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    utils = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    name = f"replan_bench_{uuid.uuid4().hex}"
    decoded = [[[call] for call in turn] for turn in calls]
    truth = entry.ground_truth[: len(calls)]
    try:
        result = checker.multi_turn_checker(
            decoded, truth, copy.deepcopy(entry.raw), CATEGORY, name
        )
    except Exception as error:  # the checker asserts on shapes it does not expect
        return Verdict(False, "harness:checker_error", _one_line(error))
    finally:
        for key in [key for key in vars(utils) if key.startswith(name)]:
            delattr(utils, key)
    if result.get("valid"):
        return Verdict(True)
    return Verdict(False, str(result.get("error_type", "")), str(result.get("error_message", "")))


# --- the metering proxy -------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One chat completion as the proxy saw it: the HTTP status and the reply's usage."""

    status: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_n: int | None = None
    """llama-server's `timings.prompt_n`: prompt tokens it processed (not taken from cache)."""

    def processed(self) -> tuple[int | None, str]:
        """Prompt tokens the server processed, and where the figure comes from."""
        if self.prompt_n is not None:
            return self.prompt_n, "timings"
        if self.prompt_tokens is None:
            return None, "unknown"
        if self.cached_tokens is not None:
            return self.prompt_tokens - self.cached_tokens, "cached"
        return self.prompt_tokens, "sent"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_exchange(status: int, body: bytes) -> Exchange:
    """The usage a chat completion reply reports: a JSON body, or the chunks of a stream
    (the last usage and timings seen win)."""
    objects: list[Any] = []
    try:
        objects = [json.loads(body)]
    except ValueError:
        for line in body.decode(errors="replace").splitlines():
            data = line.removeprefix("data:").strip()
            if line.startswith("data:") and data and data != "[DONE]":
                try:
                    objects.append(json.loads(data))
                except ValueError:
                    continue
    usage: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    for obj in objects:
        if isinstance(obj, dict):
            usage = obj.get("usage") or usage
            timings = obj.get("timings") or timings
    details = usage.get("prompt_tokens_details") or {}
    return Exchange(
        status=status,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_int(details.get("cached_tokens")) if isinstance(details, dict) else None,
        prompt_n=_int(timings.get("prompt_n")),
    )


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _ProxyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Quiet."""

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._forward(self.rfile.read(length))

    def _forward(self, body: bytes | None) -> None:
        owner = self.server.owner
        path = self.path.removeprefix("/v1")
        headers = {
            key: value
            for key, value in self.headers.items()
            if key.lower() in ("authorization", "content-type", "accept")
        }
        request = urllib.request.Request(
            owner.upstream + path, data=body, headers=headers, method=self.command
        )
        try:
            with urllib.request.urlopen(request, timeout=owner.read_timeout) as answer:
                status, kind, data = (
                    answer.status,
                    answer.headers.get("Content-Type"),
                    answer.read(),
                )
        except urllib.error.HTTPError as error:
            status, kind, data = error.code, error.headers.get("Content-Type"), error.read()
        except (OSError, ValueError) as error:
            message = {"error": {"message": f"metering proxy: {error}", "type": "proxy_error"}}
            status, kind, data = 502, "application/json", json.dumps(message).encode()
        if self.command == "POST" and path.rstrip("/").endswith("/chat/completions"):
            owner.record(read_exchange(status, data))
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            self.close_connection = True


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, owner: MeteringProxy) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


@dataclass
class MeteringProxy(BackgroundServer):
    """An OpenAI-compatible pass-through on 127.0.0.1 that records every chat completion's
    usage (`exchanges`), for every design alike. Use as a context manager."""

    upstream: str
    read_timeout: float = REQUEST_TIMEOUT + 60
    exchanges: list[Exchange] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.upstream = self.upstream.rstrip("/")

    def make_server(self) -> _ProxyServer:
        """The proxy's server, on a free port."""
        return _ProxyServer(self)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.bound_port}/v1"

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def since(self, mark: int) -> list[Exchange]:
        """The exchanges recorded after the first `mark` ones."""
        with self._lock:
            return self.exchanges[mark:]

    def mark(self) -> int:
        with self._lock:
            return len(self.exchanges)


@dataclass(frozen=True)
class Spent:
    """What a run's model calls cost, added up; a token figure is None when a reply did not
    report it."""

    model_calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cached_tokens: int | None = 0
    processed_tokens: int | None = 0
    processed_from: str = ""

    @classmethod
    def of(cls, exchanges: Sequence[Exchange]) -> Spent:
        answered = [e for e in exchanges if e.status == 200]
        processed = [e.processed() for e in answered]
        return cls(
            model_calls=len(exchanges),
            input_tokens=_total(e.prompt_tokens for e in answered),
            output_tokens=_total(e.completion_tokens for e in answered),
            cached_tokens=_total(e.cached_tokens for e in answered),
            processed_tokens=_total(count for count, _ in processed),
            processed_from="+".join(sorted({source for _, source in processed})),
        )


def _total(values: Any) -> int | None:
    listed = list(values)
    return None if any(v is None for v in listed) else sum(listed)


# --- the designs --------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    """Where the designs' model requests go (the metering proxy) and the model's name."""

    base_url: str
    model: str


@dataclass(frozen=True)
class Bounds:
    """How far each run may go; every design gets the same."""

    request_timeout: float = REQUEST_TIMEOUT
    turn_timeout: float = TURN_TIMEOUT
    retries: int = RETRIES
    decision_max_tokens: int = DECISION_MAX_TOKENS
    executor_max_tokens: int = EXECUTOR_MAX_TOKENS
    max_iterations: int = MAX_ITERATIONS
    executor_max_steps: int = EXECUTOR_MAX_STEPS


@dataclass(frozen=True)
class TurnEnd:
    """How a design's turn ended: its answer, and a stop reason when it did not finish."""

    answer: str
    stopped: str = ""


class Design(Protocol):
    """One design, ready to take the user turns of one conversation."""

    async def turn(self, request: str) -> TurnEnd: ...


def chat_model(server: Server, bounds: Bounds, max_tokens: int) -> BaseChatModel:
    """A baseline's chat model, set up as replan sets up its own (`baseline_chat_model`)."""
    return baseline_chat_model(
        server.base_url,
        server.model,
        max_tokens=max_tokens,
        timeout=bounds.request_timeout,
        max_retries=bounds.retries,
    )


def replan_design(
    tools: list[BaseTool], server: Server, bounds: Bounds, **settings: Any
) -> tuple[Any, Context]:
    """replan's graph (on an in-memory saver) and the context of its runs: `bounds` as every
    design gets them, no task tools (the baselines have none), and further `settings`."""
    graph = build_plan_execute_graph(
        tools=tools,
        checkpointer=InMemorySaver(serde=checkpoint_serializer()),
        max_iterations=bounds.max_iterations,
        executor_max_steps=bounds.executor_max_steps,
    )
    context = Context(
        model=server.model,
        base_url=server.base_url,
        timeout=bounds.request_timeout,
        max_retries=bounds.retries,
        decision_max_tokens=bounds.decision_max_tokens,
        executor_max_tokens=bounds.executor_max_tokens,
        task_tools="none",
        **settings,
    )
    return graph, context


class ReplanDesign:
    """replan's graph with its defaults; one invocation per user turn on one thread."""

    def __init__(self, tools: list[BaseTool], server: Server, bounds: Bounds) -> None:
        self.graph, self.context = replan_design(tools, server, bounds)
        self.config: RunnableConfig = {"configurable": {"thread_id": THREAD}}

    async def turn(self, request: str) -> TurnEnd:
        result = await self.graph.ainvoke(
            {"messages": [("user", request)]}, self.config, context=self.context
        )
        return TurnEnd(str(result.get("response", "")), str(result.get("stop_reason") or ""))


class TutorialDesign:
    """The tutorial's graph in its multi-turn form; one invocation per user turn."""

    def __init__(self, tools: list[BaseTool], server: Server, bounds: Bounds) -> None:
        self.graph = tutorial_graph(
            chat_model(server, bounds, bounds.executor_max_tokens),
            InMemorySaver(),
            tools,
            decision_model=chat_model(server, bounds, bounds.decision_max_tokens),
            executor_max_steps=bounds.executor_max_steps,
        )
        # planner, then an agent step and a replanner call per round
        limit = 2 * bounds.max_iterations + 2
        self.config: RunnableConfig = {
            "configurable": {"thread_id": THREAD},
            "recursion_limit": limit,
        }

    async def turn(self, request: str) -> TurnEnd:
        result = await self.graph.ainvoke(tutorial_turn(request), self.config)
        return TurnEnd(str(result.get("response", "")))


class ReactDesign:
    """A plain ReAct agent; each user turn appended to its thread. With `recovery`, the same
    agent reads the calls its model wrote as text (`TextCallRecoveryMiddleware`)."""

    def __init__(
        self, tools: list[BaseTool], server: Server, bounds: Bounds, recovery: bool = False
    ) -> None:
        model = chat_model(server, bounds, bounds.executor_max_tokens)
        middleware = [TextCallRecoveryMiddleware()] if recovery else []
        self.agent = react_agent(model, tools, InMemorySaver(), middleware)
        self.config = react_config(THREAD, bounds.executor_max_steps)

    async def turn(self, request: str) -> TurnEnd:
        result = await self.agent.ainvoke({"messages": [("user", request)]}, self.config)
        messages = result.get("messages") or []
        return TurnEnd(messages[-1].text if messages else "")


BUILDERS: dict[str, Callable[[list[BaseTool], Server, Bounds], Design]] = {
    "replan": ReplanDesign,
    "tutorial": TutorialDesign,
    "react": ReactDesign,
    "react+recovery": partial(ReactDesign, recovery=True),
}


# --- one entry with one design ------------------------------------------------------------


@dataclass
class Row:
    """One design on one entry: the verdict, what it cost, and what each turn did."""

    design: str
    entry: str
    index: int
    split: str
    turns: int
    doc_chars: int
    passed: bool
    turns_passed: int
    """The longest prefix of turns BFCL's checker accepts (`turns_passed`)."""
    error_type: str
    error: str
    model_calls: int
    model_calls_per_turn: float
    """Model calls per turn run (the turns fed, a stopped one included)."""
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    processed_tokens: int | None
    processed_from: str
    wall: float
    seed: int | None = None
    calls: list[list[str]] = field(default_factory=list)
    """The calls the tools ran, per turn fed."""
    answers: list[str] = field(default_factory=list)
    """Each turn's answer, shortened."""


def _one_line(error: BaseException) -> str:
    return _short(f"{type(error).__name__}: {str(error) or 'no message'}")


def _short(value: str, limit: int = TEXT_CHARS) -> str:
    line = " ".join(value.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def run_entry(
    entry: Entry, design: str, server: Server, bounds: Bounds, proxy: MeteringProxy
) -> Row:
    """Feed the entry's turns to a fresh `design` with fresh APIs, then score the calls."""
    session = ApiSession(entry)
    built = BUILDERS[design](session.tools(), server, bounds)
    mark, started = proxy.mark(), time.perf_counter()
    answers: list[str] = []
    stopped, ran = "", 0
    for number, request in enumerate(entry.turns):
        session.turn, ran = number, number + 1
        began = time.perf_counter()
        try:
            async with asyncio.timeout(bounds.turn_timeout):
                end = await built.turn(request)
            answers.append(_short(end.answer))
            if end.stopped:
                stopped = f"turn {number}: stopped: {end.stopped}"
        except TimeoutError:
            stopped = f"turn {number}: stopped after the turn timeout of {bounds.turn_timeout:g} s"
        except Exception as error:  # a weak model's turn may fail in any way: record it
            stopped = f"turn {number}: {_one_line(error)}"
        _progress(
            f"{entry.id} / {design}: turn {number + 1}/{len(entry.turns)} "
            f"{'ended' if not stopped else 'STOPPED'} in {time.perf_counter() - began:.1f} s, "
            f"{len(session.calls[number])} API calls"
        )
        if stopped:
            break
    wall = time.perf_counter() - started
    fed = session.calls[:ran]
    verdict = Verdict(False, "harness:turn_stopped", stopped) if stopped else score(entry, fed)
    ended = fed[: ran - 1] if stopped else fed  # a stopped turn never passes
    passed_turns = len(fed) if verdict.passed else turns_passed(entry, ended)
    spent = Spent.of(proxy.since(mark))
    _progress(
        f"{entry.id} / {design}: {'PASSED' if verdict.passed else 'FAILED'}"
        f"{'' if verdict.passed else f' ({verdict.error_type})'}, "
        f"{passed_turns}/{len(entry.turns)} turns passed, "
        f"{spent.model_calls} model calls, {wall:.1f} s"
    )
    return Row(
        design=design,
        entry=entry.id,
        index=entry.index,
        split=entry.split,
        turns=len(entry.turns),
        doc_chars=entry.doc_chars,
        passed=verdict.passed,
        turns_passed=passed_turns,
        error_type=verdict.error_type,
        error=_short(verdict.error),
        model_calls=spent.model_calls,
        model_calls_per_turn=spent.model_calls / ran,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cached_tokens=spent.cached_tokens,
        processed_tokens=spent.processed_tokens,
        processed_from=spent.processed_from,
        wall=wall,
        calls=[list(turn) for turn in fed],
        answers=answers,
    )


async def run_all(
    entries: Sequence[Entry],
    designs: Sequence[str],
    server: Server,
    bounds: Bounds,
    proxy: MeteringProxy,
    seed: int | None = None,
) -> list[Row]:
    """Every design on every entry, one after the other (entry by entry)."""
    rows = []
    for entry in entries:
        for design in designs:
            row = await run_entry(entry, design, server, bounds, proxy)
            row.seed = seed
            rows.append(row)
    return rows


# --- the scripted model -------------------------------------------------------------------


def parse_call(call: str, parameters: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call such as `sort('a.pdf')` as a tool name and its arguments by name
    (positional ones named from `parameters`, the method's parameters in order)."""
    node = ast.parse(call, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise ValueError(f"not a call: {call!r}")
    args = {
        name: ast.literal_eval(value) for name, value in zip(parameters, node.args, strict=False)
    }
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    return node.func.id, args


_FIRST_NUMBER = re.compile(r"steps of the next plan from (\d+)")
"""Where a follow-up's plan numbers start, as replan's planner is told."""


@dataclass
class GroundTruthModel:
    """A scripted model that fulfils each turn of `entries` with the ground truth's calls, one
    call per reply, in every design: replan's planner plans the turn's request as one step
    and its replanner then answers; the tutorial's planner and replanner likewise; an agent
    loop (replan's executor, the tutorial's agent, the ReAct agent) makes the turn's next call
    not yet made since its last user message, then says it is done.

    `drop_last` leaves out each turn's last call (a wrong run, for tests of the checker);
    `tool_steps` has replan's planner write the turn's calls as a chain of tool steps when it
    is offered them (the design's ceiling: no executor call at all)."""

    entries: Sequence[Entry]
    drop_last: bool = False
    tool_steps: bool = False

    @cached_property
    def parameters(self) -> dict[str, list[str]]:
        """Each API method's parameter names, in order."""
        backend, names = _backend(), {}
        for entry in self.entries:
            for cls in entry.classes:
                module = importlib.import_module(backend.CLASS_FILE_PATH_MAPPING[cls])
                for name, method in inspect.getmembers(getattr(module, cls), inspect.isfunction):
                    names[name] = [p for p in inspect.signature(method).parameters if p != "self"]
        return names

    def current(self, prompt: str) -> tuple[Entry, int] | None:
        """The entry and turn being worked on: the latest turn whose text is in `prompt`."""
        found = [
            (entry, number)
            for entry in self.entries
            for number, request in enumerate(entry.turns)
            if request in prompt
        ]
        return max(found, key=lambda hit: hit[1]) if found else None

    def __call__(self, request: dict[str, Any]) -> Reply:
        prompt = prompt_text(request)
        hit = self.current(prompt)
        if hit is None:
            return text("scripted model: no turn of the chosen entries in the prompt")
        entry, number = hit
        decision = tutorial_decision(request)
        if decision == "Plan":
            return tool_call("Plan", {"steps": [entry.turns[number]]})
        if decision == "Act":
            return tool_call("Act", {"action": {"response": "Done."}})
        role = classify(request).role
        key = first_param(request, "plan", "steps")
        if role == "planner" and self.tool_steps and step_tools(request):
            first = _FIRST_NUMBER.search(prompt)
            steps = self.tool_step_chain(entry, number, int(first[1]) if first else 1)
            return tool_call("plan", {key: steps})
        if role == "planner":
            return tool_call("plan", {key: [entry.turns[number]]})
        if role == "replanner":
            return tool_call("respond", {first_param(request, "respond", "response"): "Done."})
        if role == "answer":
            return text("Done.")
        return self.next_call(request, entry, number)

    def tool_step_chain(self, entry: Entry, number: int, first: int) -> list[dict[str, Any]]:
        """The turn's ground-truth calls as tool steps, each after the one before, numbered
        from `first` (a follow-up's plan numbers on from the turn before's steps)."""
        steps = []
        for position, call in enumerate(entry.ground_truth[number]):
            name, args = parse_call(call, self.parameters.get(call.split("(")[0], []))
            after = [first + position - 1] if position else []
            steps.append({"tool": name, "args": args, "depends_on": after})
        return steps

    def next_call(self, request: dict[str, Any], entry: Entry, number: int) -> Reply:
        """The turn's next ground-truth call, counted by the tool results since the last user
        message (a call answered as not made is made again); "Done." once all are made."""
        messages = request.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        made = sum(  # a call replan answered without making it is made again
            m.get("role") == "tool" and not message_text(m).startswith(NOT_CALLED)
            for m in messages[last_user:]
        )
        calls = entry.ground_truth[number][: -1 if self.drop_last else None]
        if made >= len(calls):
            results = [message_text(m) for m in messages[last_user:] if m.get("role") == "tool"]
            return text("Done. " + " ".join(results)[:200])
        name, args = parse_call(calls[made], self.parameters.get(calls[made].split("(")[0], []))
        return tool_call(name, args)


# --- totals and the table -----------------------------------------------------------------


@dataclass
class Totals:
    """The rows of one design (and split) added up; tokens None when any row's are unknown."""

    entries: int = 0
    passed: int = 0
    turns: int = 0
    turns_passed: int = 0
    turns_run: int = 0
    """The turns fed to the design (an entry ends at a stopped turn)."""
    model_calls: int = 0
    api_calls: int = 0
    """The calls the tools ran."""
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    processed_tokens: int | None = 0
    wall: float = 0.0


def _plus(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def totals(rows: Sequence[Row]) -> dict[tuple[str, str], Totals]:
    """Totals per (design, split), and per (design, "all")."""
    out: dict[tuple[str, str], Totals] = {}
    for row in rows:
        for split in (row.split, "all"):
            total = out.setdefault((row.design, split), Totals())
            total.entries += 1
            total.passed += row.passed
            total.turns += row.turns
            total.turns_passed += row.turns_passed
            total.turns_run += len(row.calls)
            total.model_calls += row.model_calls
            total.api_calls += sum(map(len, row.calls))
            total.input_tokens = _plus(total.input_tokens, row.input_tokens)
            total.output_tokens = _plus(total.output_tokens, row.output_tokens)
            total.processed_tokens = _plus(total.processed_tokens, row.processed_tokens)
            total.wall += row.wall
    return out


COLUMNS = (
    ("entry", 20),
    ("design", 16),
    ("passed", 7),
    ("turns", 7),
    ("calls", 6),
    ("in tok", 9),
    ("out tok", 8),
    ("processed", 10),
    ("from", 9),
    ("wall s", 8),
)


def _cell(value: int | float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _line(cells: Sequence[str]) -> str:
    return table_line(cells, COLUMNS)


def table(rows: Sequence[Row]) -> str:
    """The rows, then totals per design and split, side by side, then why entries failed."""
    lines = [_line([name for name, _ in COLUMNS])]
    for row in rows:
        lines.append(
            _line(
                [
                    f"base {row.index}",
                    row.design,
                    "yes" if row.passed else "NO",
                    f"{row.turns_passed}/{row.turns}",
                    _cell(row.model_calls),
                    _cell(row.input_tokens),
                    _cell(row.output_tokens),
                    _cell(row.processed_tokens),
                    row.processed_from or "-",
                    f"{row.wall:.1f}",
                ]
            )
        )
    lines.append("")
    by_split = totals(rows)
    order = {"dev": 0, "held-back": 1, "all": 2}
    for design, split in sorted(by_split, key=lambda key: (DESIGNS.index(key[0]), order[key[1]])):
        total = by_split[design, split]
        lines.append(
            _line(
                [
                    f"total {split}",
                    design,
                    f"{total.passed}/{total.entries}",
                    f"{total.turns_passed}/{total.turns}",
                    _cell(total.model_calls),
                    _cell(total.input_tokens),
                    _cell(total.output_tokens),
                    _cell(total.processed_tokens),
                    "",
                    f"{total.wall:.1f}",
                ]
            )
        )
    lines += ["", *side_by_side(rows)]
    failed = [f"{r.entry} / {r.design}: {r.error_type}: {r.error}" for r in rows if not r.passed]
    return "\n".join(lines + (["", "Failed:", *failed] if failed else []))


SIDE_BY_SIDE: dict[str, Callable[[Totals], str]] = {
    "passed": lambda t: f"{t.passed}/{t.entries}",
    "turns passed": lambda t: f"{t.turns_passed}/{t.turns}",
    "model calls": lambda t: _cell(t.model_calls),
    "model calls / turn": lambda t: f"{t.model_calls / t.turns_run:.1f}",
    "API calls / turn": lambda t: f"{t.api_calls / t.turns_run:.1f}",
    "input tokens": lambda t: _cell(t.input_tokens),
    "output tokens": lambda t: _cell(t.output_tokens),
    "processed tokens": lambda t: _cell(t.processed_tokens),
    "wall s": lambda t: f"{t.wall:.1f}",
}


SIDE_WIDTH = 2 + max(map(len, DESIGNS))
"""The width of a design's column side by side."""


def side_by_side(rows: Sequence[Row]) -> list[str]:
    """Per split (development, held back, all), a metric per line and a design per column."""
    by_split = totals(rows)
    designs = [d for d in DESIGNS if any(row.design == d for row in rows)]
    lines: list[str] = []
    for split in ("dev", "held-back", "all"):
        if not any((design, split) in by_split for design in designs):
            continue
        entries = len({row.entry for row in rows if split in (row.split, "all")})
        head = f"{split} ({entries} entries)"
        lines.append(f"{head:<20}" + "".join(f"{d:>{SIDE_WIDTH}}" for d in designs))
        for metric, show in SIDE_BY_SIDE.items():
            cells = [show(by_split[d, split]) if (d, split) in by_split else "-" for d in designs]
            lines.append(f"{metric:<20}" + "".join(f"{cell:>{SIDE_WIDTH}}" for cell in cells))
        lines.append("")
    return lines[:-1]


def listing(entries: Sequence[Entry]) -> str:
    """Entries as `--list` shows them: number, turns, document characters, classes, calls."""
    head = f"{'entry':>5} {'split':<9} {'turns':>5} {'doc chars':>9} {'answer calls':>12}  classes"
    return "\n".join(
        [head]
        + [
            f"{e.index:>5} {e.split:<9} {len(e.turns):>5} {e.doc_chars:>9} "
            f"{e.answer_calls:>12}  {', '.join(e.classes)}"
            for e in entries
        ]
    )


# --- the command --------------------------------------------------------------------------


def _entries(value: str) -> list[int]:
    try:
        return parse_entries(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line; bad flags or values exit 2 with one line."""
    parser = Parser(prog="bfcl_multi_turn.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="OpenAI-compatible server (default: scripted server)")
    parser.add_argument("--model", help="model name (default: $REPLAN_MODEL)")
    parser.add_argument("--design", action="append", choices=DESIGNS, default=[])
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--entries", type=_entries, help="entry numbers: 3,7,10-12")
    chosen.add_argument("--sample", type=positive(int), help="N entries drawn from --pool")
    chosen.add_argument("--shortest", type=positive(int), help="the N shortest of --pool")
    parser.add_argument("--seed", type=int, help="seed of --sample (default: a random one)")
    parser.add_argument("--pool", choices=POOLS, default="dev", help="entries to draw from")
    parser.add_argument("--list", action="store_true", help="rank the pool's entries and stop")
    parser.add_argument("--timeout", type=positive(float), default=TURN_TIMEOUT, help="s/turn")
    parser.add_argument(
        "--request-timeout", type=positive(float), default=REQUEST_TIMEOUT, help="s per call"
    )
    parser.add_argument("--retries", type=int, default=RETRIES, help="retries per model call")
    parser.add_argument("--max-iterations", type=positive(int), default=MAX_ITERATIONS)
    parser.add_argument("--executor-max-steps", type=positive(int), default=EXECUTOR_MAX_STEPS)
    parser.add_argument("--decision-max-tokens", type=positive(int), default=DECISION_MAX_TOKENS)
    parser.add_argument("--executor-max-tokens", type=positive(int), default=EXECUTOR_MAX_TOKENS)
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    options = parser.parse_args(argv)
    if options.seed is not None and options.sample is None:
        parser.error("--seed goes with --sample")
    if options.retries < 0:
        parser.error("--retries must be 0 or more")
    if options.json is not None and not options.json.parent.is_dir():
        parser.error(f"--json: no folder {str(options.json.parent)!r}")
    return options


def choose(options: argparse.Namespace, entries: Sequence[Entry]) -> tuple[list[Entry], int | None]:
    """The entries the options choose, and the seed of a sample (None otherwise)."""
    by_index = {e.index: e for e in entries}
    pool = POOLS[options.pool]
    if options.entries:
        return [by_index[n] for n in options.entries], None
    if options.sample:
        seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
        return [by_index[n] for n in sample(pool, options.sample, seed)], seed
    return ranked(entries, pool)[: options.shortest or 2], None


@contextmanager
def serving(
    base_url: str | None, model: str | None, responder: Responder, read_timeout: float
) -> Iterator[tuple[Server, MeteringProxy]]:
    """The metering proxy in front of the server given, or of the scripted server answering
    with `responder`. The designs read the API key from OPENAI_API_KEY: a local server takes
    any, so one is set."""
    os.environ.setdefault("OPENAI_API_KEY", "local")
    if base_url:
        name = model or os.environ.get("REPLAN_MODEL") or MODEL_ID
        with MeteringProxy(base_url, read_timeout) as proxy:
            yield Server(proxy.base_url, name), proxy
        return
    with (
        ScriptedOpenAIServer(responder) as scripted,
        MeteringProxy(scripted.base_url, read_timeout) as proxy,
    ):
        yield Server(proxy.base_url, MODEL_ID), proxy


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen entries with every design and print the table; 0 when all passed."""
    options = parse_args(argv)
    try:
        entries = load_entries()
    except BfclMissing as missing:
        print(f"bfcl_multi_turn.py: error: {missing}", file=sys.stderr)
        return 2
    if options.list:
        print(listing(ranked(entries, POOLS[options.pool])))
        return 0
    chosen, seed = choose(options, entries)
    picks = ", ".join(f"{e.index} ({len(e.turns)} turns, {e.doc_chars} doc chars)" for e in chosen)
    _progress(f"entries: {picks}" + (f"; sample seed {seed}" if seed is not None else ""))
    bounds = Bounds(
        request_timeout=options.request_timeout,
        turn_timeout=options.timeout,
        retries=options.retries,
        decision_max_tokens=options.decision_max_tokens,
        executor_max_tokens=options.executor_max_tokens,
        max_iterations=options.max_iterations,
        executor_max_steps=options.executor_max_steps,
    )
    designs = list(dict.fromkeys(options.design)) or list(DESIGNS)
    read_timeout = options.request_timeout + 60
    scripted = GroundTruthModel(chosen)
    with serving(options.base_url, options.model, scripted, read_timeout) as (server, proxy):
        rows = asyncio.run(run_all(chosen, designs, server, bounds, proxy, seed))
    print(table(rows))
    if options.json is not None:
        options.json.write_text(json.dumps([asdict(row) for row in rows], indent=2) + "\n")
    return 0 if all(row.passed for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
