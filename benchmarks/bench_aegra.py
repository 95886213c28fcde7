"""Aegra serving replan: many runs at once on one server process, then on two.

Every configuration gets a new database on one PostgreSQL server and its own queue on one Redis
server; its processes serve the repository's aegra.json from the Python 3.12 environment
`.venv-aegra/` (made if missing). `--runs` runs ("run i in 2 steps": a planner call, two steps,
two replanner calls) are started at once through langgraph-sdk, spread over the processes, and
the scripted model (`replan.testing.plan_script`) holds every reply `--latency` seconds.

Each configuration is checked: every run succeeded, the model planned each objective exactly
once, and the processes' logs count one finished run per run (each process finishing some when
there are two). Printed: wall time from the first start to the last finish, and the ratio of two
processes to one, with Aegra's default run slots per process (3 workers x 10) and with
`--slots` per process.

Run: python benchmarks/bench_aegra.py [--runs 20] [--latency 1.0] [--slots 5]
     [--postgres postgresql://postgres@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from langgraph_sdk import get_sync_client

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from replan.testing.aegra import (
    add_server_options,
    aegra_database,
    aegra_env,
    aegra_server,
    finish_all,
    prepared_aegra,
    redis_names,
    start_runs_at_once,
)

REPO = Path(__file__).resolve().parent.parent
GRAPH = "plan_execute"
PLANNED = {"task_tools": "compact"}
"""Each run's context: the executor gets the task tools, so that the tool-less graph plans."""
FINISHED = "Worker finished run"


@dataclass(frozen=True)
class Outcome:
    """One configuration's wall time and the runs each process finished."""

    processes: int
    slots: int | None
    wall: float
    finished: list[int]


def measure(
    aegra: Path, args: argparse.Namespace, processes: int, slots: int | None, folder: Path
) -> Outcome:
    """Start the servers, run `args.runs` runs at once, check them; the wall time."""
    clock = script.Clock(latency=args.latency)
    topics = [f"run {i} in 2 steps" for i in range(args.runs)]
    limits = {"WORKER_COUNT": "1", "N_JOBS_PER_WORKER": str(slots)} if slots else {}
    with ExitStack() as stack:
        model = stack.enter_context(ScriptedOpenAIServer(clock))
        database = stack.enter_context(aegra_database(args.postgres))
        extra = {"OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": model.base_url, **limits}
        env = aegra_env(database, args.redis, redis_names(), extra)
        servers = [
            stack.enter_context(
                aegra_server(
                    aegra, REPO / "aegra.json", env, folder / f"{processes}-{slots}-{i}.log"
                )
            )
            for i in range(processes)
        ]
        clients = [get_sync_client(url=server.url) for server in servers]
        start = time.perf_counter()
        runs = finish_all(start_runs_at_once(clients, topics, GRAPH, PLANNED))
        wall = time.perf_counter() - start
        finished = [server.log_count(FINISHED) for server in servers]
    failed = [run["run_id"] for run in runs if run["status"] != "success"]
    planned = sorted(
        script.objective(span.request) for span in clock.spans if span.call.role == "planner"
    )
    if failed or planned != sorted(topics) or sum(finished) != args.runs or 0 in finished:
        raise SystemExit(f"check failed: failed={failed} finished={finished} planned={planned}")
    return Outcome(processes, slots, wall, finished)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=5, help="runs at once per process")
    add_server_options(parser)
    args = parser.parse_args()
    aegra = prepared_aegra(args.redis, REPO)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, {args.runs} runs, latency {args.latency}s")
    print(f"{'slots per process':>18} {'1 process':>10} {'2 processes':>12} {'2 / 1':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for slots in (None, args.slots):
            one, two = (measure(aegra, args, n, slots, Path(tmp)) for n in (1, 2))
            label = "default (30)" if slots is None else str(slots)
            print(
                f"{label:>18} {one.wall:>9.1f}s {two.wall:>11.1f}s {two.wall / one.wall:>6.2f}"
                f"   (runs finished per process: {one.finished}, {two.finished})"
            )


if __name__ == "__main__":
    main()
