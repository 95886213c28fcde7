"""Actions run once under load on Aegra: runs with tool calls over 1, 2 and 3 Aegra processes
on one PostgreSQL and Redis, with a seeded schedule of SIGKILLs.

Each configuration gets a new database and Redis names; its processes serve a graph with three
tools of the benchmark's own, written into a temporary aegra.json: `lookup` (read-only), `put`
(declared safe to retry, but it ignores the idempotency key, so every re-sent call is visible)
and `send` (not safe to retry). Every effect of `put` and `send` is a line in a file, written
as the call starts; the call then works `--tool-seconds` more, so that kills land inside calls.
Each run ("run i in 1 steps") plans one step whose executor calls `lookup`, `put` and `send`,
one a model turn, then reports; the scripted model holds every reply `--latency` seconds.

Once every run has started, a killer SIGKILLs one of the live processes (its whole process
group) at seeded random intervals (`--seed`, `--kill-every` seconds on average) and starts a
new one in its place; Aegra's reaper hands the killed process's runs to a live one. A run that
pauses on a `send` that was in flight (the HITL pause of docs/persistence.md) is answered with
`respond`, as a person would, and counted.

Printed per configuration: runs finished (target: all; a run not finished is lost), runs
paused (and answered), `put` calls re-sent (effects beyond one per run), `send` effects applied
twice (target 0), kills, runs finished per minute per process, and the time from a kill to the
killed runs' next model request (median and largest).

Run: python benchmarks/bench_actions_once.py [--runs 300] [--small-runs 100] [--latency 0.2]
     [--tool-seconds 0.5] [--kill-every 8] [--seed 36] [--postgres URL] [--redis URL]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_sdk import get_sync_client

from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from replan.testing.aegra import (
    AegraServer,
    add_server_options,
    aegra_database,
    aegra_env,
    aegra_server,
    prepared_aegra,
    redis_names,
)

REPO = Path(__file__).resolve().parent.parent
GRAPH = "acting"
LEASES = {"LEASE_DURATION_SECONDS": "5", "HEARTBEAT_INTERVAL_SECONDS": "2"}
"""Aegra's worker leases, short (its default is 30 s) so that a killed process's runs are
taken back within seconds."""
TOOLS = '''
import os
import time
from pathlib import Path

from langchain_core.tools import tool

from replan import build_plan_execute_graph, declare_effects, idempotency_key
from replan.graphs.served import served

EFFECTS = Path(os.environ["BENCH_EFFECTS"])


def effect(kind: str, run: str) -> str:
    with EFFECTS.open("a") as out:
        out.write(f"{kind} {run} {idempotency_key()}\\n")
    time.sleep(float(os.environ["BENCH_TOOL_SECONDS"]))  # the call goes on after its effect
    return f"{kind} {run} done"


@tool
def lookup(run: str) -> str:
    """Look up a run's record."""
    return f"record of {run}"


@tool
def put(run: str) -> str:
    """Store a run's record."""
    return effect("put", run)


@tool
def send(run: str) -> str:
    """Send a run's message."""
    return effect("send", run)


tools = [declare_effects(lookup, read_only=True), declare_effects(put, retry_safe=True), send]
graph = served(build_plan_execute_graph(tools=tools))
'''
CALLS = ("lookup", "put", "send")
RUN = re.compile(r"\b(run\d+) in 1 steps", re.IGNORECASE)
START_ATTEMPTS = 5
ANSWER = {"decisions": [{"type": "respond", "message": "sent"}]}


@dataclass
class Model:
    """The scripted model: each executor step calls `CALLS` in turn, then reports; every reply
    waits `latency` seconds; the time of each request is kept per run."""

    latency: float
    requests: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: dict[str, Any]) -> Reply:
        found = RUN.search(script.prompt_text(request))
        run = found[1].lower() if found else "?"
        with self.lock:
            self.requests.setdefault(run, []).append(time.monotonic())
        time.sleep(self.latency)
        call = script.classify(request)
        made = sum(m.get("role") == "tool" for m in request.get("messages", []))
        if call.role == "executor" and made < len(CALLS):
            return tool_call(CALLS[made], {"run": run})
        return script.respond(request)


@dataclass
class Cluster:
    """The live Aegra processes of one configuration, replaced as they are killed."""

    aegra: Path
    config: Path
    env: dict[str, str]
    folder: Path
    stack: ExitStack
    servers: list[AegraServer] = field(default_factory=list)
    started: int = 0

    def start(self) -> AegraServer:
        self.started += 1
        log = self.folder / f"server-{self.started}.log"
        server = self.stack.enter_context(aegra_server(self.aegra, self.config, self.env, log))
        self.servers.append(server)
        return server

    def kill_one(self, pick: random.Random) -> None:
        victim = pick.choice(self.servers)
        victim.kill()
        self.servers.remove(victim)
        self.start()

    def client(self) -> Any:
        return get_sync_client(url=self.servers[-1].url)


@dataclass(frozen=True)
class Outcome:
    processes: int
    runs: int
    finished: int
    paused: int
    re_sent: int
    twice: int
    kills: int
    minutes: float
    stalls: list[float]


@contextmanager
def killing(
    cluster: Cluster, seed: int, every: float, done: threading.Event
) -> Iterator[list[float]]:
    """SIGKILL a live process at seeded random intervals (mean `every` s) until `done`; the
    kill times."""
    kills: list[float] = []
    pick = random.Random(seed)

    def loop() -> None:
        while not done.wait(pick.expovariate(1 / every)):
            kills.append(time.monotonic())
            cluster.kill_one(pick)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield kills
    finally:
        done.set()
        thread.join()


def _settle(cluster: Cluster, threads: list[str], deadline: float) -> tuple[int, int]:
    """Wait for each thread's runs to end, answering each paused run once with `ANSWER`;
    (threads finished, threads that paused)."""
    pending, answered, paused, finished = set(threads), set(), set(), 0
    while pending and time.monotonic() < deadline:
        for thread in sorted(pending):
            try:
                client = cluster.client()
                runs = client.runs.list(thread, limit=1)
                run, status = (runs[0]["run_id"], runs[0]["status"]) if runs else ("", "pending")
                if status == "success":
                    finished += 1
                    pending.discard(thread)
                elif status == "interrupted" and run not in answered:
                    client.runs.create(thread, GRAPH, command={"resume": ANSWER})
                    answered.add(run)
                    paused.add(thread)
            except Exception:  # a server killed under the request: ask the next one
                continue
        time.sleep(0.5)
    return finished, len(paused)


def _start(clients: list[Any], topics: list[str]) -> list[str]:
    """Start a run per topic on a new thread, 20 at a time, through the clients in turn; a
    request the server refused under the load (HTTP 500) is sent again. The thread ids."""

    def start(index: int) -> str:
        client = clients[index % len(clients)]
        thread = ""
        for attempt in range(START_ATTEMPTS):
            try:
                thread = thread or str(client.threads.create()["thread_id"])
                if not client.runs.list(thread, limit=1):  # a refused create may have made one
                    objective = {"messages": [{"role": "user", "content": topics[index]}]}
                    client.runs.create(thread, GRAPH, input=objective)
                return thread
            except Exception:
                if attempt == START_ATTEMPTS - 1:
                    raise
                time.sleep(1 + attempt)
        raise AssertionError("unreachable")

    with ThreadPoolExecutor(max_workers=20) as pool:
        return list(pool.map(start, range(len(topics))))


def measure(
    aegra: Path, args: argparse.Namespace, processes: int, runs: int, folder: Path
) -> Outcome:
    model = Model(args.latency)
    effects = folder / f"effects-{processes}.txt"
    (folder / "acting_graph.py").write_text(TOOLS)
    config = folder / "aegra.json"
    graphs = {"graphs": {GRAPH: "./acting_graph.py:graph"}, "checkpointer": {"durability": "sync"}}
    config.write_text(json.dumps(graphs))
    topics = [f"run{i} in 1 steps" for i in range(runs)]
    with ExitStack() as stack:
        server = stack.enter_context(ScriptedOpenAIServer(model))
        database = stack.enter_context(aegra_database(args.postgres))
        extra = {"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.base_url,
                 "BENCH_EFFECTS": str(effects), "BENCH_TOOL_SECONDS": str(args.tool_seconds),
                 "PYTHONPATH": str(folder), **LEASES}  # fmt: skip
        env = aegra_env(database, args.redis, redis_names(), extra)
        cluster = Cluster(aegra, config, env, folder, stack)
        for _ in range(processes):
            cluster.start()
        clients = [get_sync_client(url=s.url) for s in cluster.servers]
        began = time.monotonic()
        threads = _start(clients, topics)
        done = threading.Event()
        with killing(cluster, args.seed + processes, args.kill_every, done) as kills:
            finished, paused = _settle(cluster, threads, began + args.timeout)
        minutes = (time.monotonic() - began) / 60
    lines = effects.read_text().splitlines() if effects.exists() else []
    counts = Counter(tuple(line.split(" ", 2)[:2]) for line in lines)
    re_sent = sum(n - 1 for (kind, _), n in counts.items() if kind == "put")
    twice = sum(n > 1 for (kind, _), n in counts.items() if kind == "send")
    stalls = [
        later - kill
        for kill in kills
        for times in model.requests.values()
        for earlier, later in zip(times, times[1:], strict=False)
        if earlier < kill < later and later - earlier > 2 * args.latency + 1
    ]
    return Outcome(processes, runs, finished, paused, re_sent, twice, len(kills), minutes, stalls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs with 3 processes")
    parser.add_argument("--small-runs", type=int, default=100, help="runs with 1 and 2")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument(
        "--tool-seconds", type=float, default=0.5, help="how long put and send work"
    )
    parser.add_argument("--kill-every", type=float, default=8.0, help="mean seconds between kills")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per configuration")
    add_server_options(parser)
    args = parser.parse_args()
    aegra = prepared_aegra(args.redis, REPO)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, latency {args.latency}s, seed {args.seed}, "
          f"a kill every {args.kill_every:g} s on average")  # fmt: skip
    header = ("processes", "runs", "finished", "lost", "paused", "put re-sent", "send twice",
              "kills", "runs/min/process", "kill→going on (median, max s)")  # fmt: skip
    print(" | ".join(header))
    for processes in (1, 2, 3):
        runs = args.runs if processes == 3 else args.small_runs
        with tempfile.TemporaryDirectory() as tmp:
            out = measure(aegra, args, processes, runs, Path(tmp))
        stall = (f"{statistics.median(out.stalls):.1f}, {max(out.stalls):.1f}"
                 if out.stalls else "-")  # fmt: skip
        rate = out.finished / out.minutes / processes
        print(" | ".join(map(str, (processes, out.runs, out.finished, out.runs - out.finished,
              out.paused, out.re_sent, out.twice, out.kills, f"{rate:.1f}", stall))))  # fmt: skip


if __name__ == "__main__":
    main()
