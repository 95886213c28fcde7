"""Time each task operation on lists of 1,000 and 10,000 tasks, against the targets.

    python benchmarks/bench_tasks.py [--sizes 1000 10000] [--file-store] [--postgres [URL]]
                                     [--turns]

Each figure is the median of several runs of one operation on a list of that many tasks, each
blocked by the one before (a dependency chain through the whole list); the runs take turns
between the sizes, so a busy machine slows them alike. The ratio column divides the largest
size by the smallest. Targeted operations (create, get, update status, add edge)
must cost, at the largest size, under 1 ms in memory and under 10 ms through a store, and grow
less than 2x across the sizes; the last column says whether they do. The other rows are for
information: a refused cycle walks the chain, listing and `find_cycle` read every task.

In memory, each operation runs on a copy of the list, as a task tool does (and LangGraph's
ToolNode deep-copies what the tool returns: the "ToolNode call" row). `--file-store` adds the
folder store, `--postgres` a PostgreSQL store (in a temporary schema, dropped afterwards); each
store operation is one transaction by a process that has used the list before, and "open" is
the first call of a new process. A write waits for one flush to disk (the "floor" row times
just that, on the same disk); the CPU columns are this process's own work, without the waiting:
the part that must not grow with the list. `--turns` times one model turn of k parallel
TaskCreate calls.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from replan.state import (
    FileTaskStore,
    PostgresTaskStore,
    Task,
    TaskContext,
    TaskStore,
    TaskTable,
    find_cycle,
    format_task_list,
)
from replan.tools.task_tools import run_task_call

TARGETED = ("create", "get", "update status", "add edge")
MEMORY_LIMIT_US, STORE_LIMIT_US, GROWTH_LIMIT = 1_000.0, 10_000.0, 2.0
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
Timed = dict[str, Callable[[], object]]  # row name -> the operation to time


def chained_context(size: int) -> TaskContext:
    """`size` tasks, each blocked by the previous one."""
    tasks = [
        Task(
            id=str(number),
            subject=f"Task {number}",
            description="benchmark task",
            blocks=[str(number + 1)] if number < size else [],
            blocked_by=[str(number - 1)] if number > 1 else [],
        )
        for number in range(1, size + 1)
    ]
    return TaskContext(tasks=TaskTable(tasks), high_watermark=size)


class Timing(NamedTuple):
    """Median microseconds per run: elapsed, and CPU time of this process (no waiting)."""

    wall: float
    cpu: float


def median_us(operation: Callable[[], object], repeats: int) -> float:
    return timed_side_by_side({0: operation}, repeats)[0].wall


def timed_side_by_side(
    operations: dict[int, Callable[[], object]], repeats: int
) -> dict[int, Timing]:
    """Time one operation on lists of each size, taking turns between the sizes, so that a
    busy machine or disk slows every size alike and the ratios stay fair."""
    walls: dict[int, list[float]] = {size: [] for size in operations}
    cpus: dict[int, list[float]] = {size: [] for size in operations}
    for _ in range(repeats):
        for size, operation in operations.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            operation()
            cpus[size].append(time.process_time() - start_cpu)
            walls[size].append(time.perf_counter() - start)
    return {
        size: Timing(statistics.median(walls[size]) * 1e6, statistics.median(cpus[size]) * 1e6)
        for size in operations
    }


def _refused(context: TaskContext, last: str) -> None:
    try:
        context.update("1", add_blocked_by=[last])
    except ValueError:
        return
    raise AssertionError("a cycle was accepted")


def in_memory_operations(context: TaskContext) -> dict[str, Callable[[], object]]:
    """Each operation runs on a fresh copy, as a tool call does; the base list never changes."""
    last = str(len(context.tasks))
    return {
        "create": lambda: context.clone().create("New", "d"),
        "get": lambda: context.clone().get(last),
        "update status": lambda: context.clone().update(last, status="in_progress"),
        "add edge": lambda: context.clone().update("1", add_blocks=[last]),
        "copy (clone/deepcopy)": context.clone,
        "delete": lambda: context.clone().delete("1"),
        "TaskUpdate tool call": lambda: run_task_call(
            context.clone(), "TaskUpdate", {"taskId": last, "owner": "bench"}
        ),
        "ToolNode call": toolnode_call(context, last),
        "refused cycle (walks)": lambda: _refused(context.clone(), last),
        "list (format)": lambda: format_task_list(context),
        "find_cycle (whole list)": lambda: find_cycle(context.tasks),
    }


def tool_graph() -> Any:
    """A graph that is just LangGraph's prebuilt ToolNode over the task tools (state mode)."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    from replan.tools import TasksState, task_tools

    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def tool_calls_state(context: TaskContext, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    from langchain_core.messages import AIMessage

    message = AIMessage(
        "",
        tool_calls=[
            {"type": "tool_call", "name": name, "args": args, "id": f"c{n}"}
            for n, (name, args) in enumerate(calls)
        ],
    )
    return {"messages": [message], "tasks_context": context}


def toolnode_call(context: TaskContext, last: str) -> Callable[[], object]:
    """One TaskUpdate call through a graph with LangGraph's prebuilt ToolNode."""
    state = tool_calls_state(context, [("TaskUpdate", {"taskId": last, "owner": "bench"})])
    return partial(tool_graph().invoke, state)


def store_operations(store: TaskStore, open_and_read: Callable[[], object], size: int) -> Timed:
    """Operations through `store` on its list of `size` chained tasks."""
    last = str(size)
    statuses = itertools.cycle(["in_progress", "pending"])
    sources = itertools.count(2)  # a new edge each time: #n -> #last closes no cycle

    return {
        "create": lambda: store.transact(lambda c: c.create("New", "d")),
        "get": lambda: store.transact(lambda c: c.get(last)),
        "update status": lambda: store.transact(lambda c: c.update(last, status=next(statuses))),
        "add edge": lambda: store.transact(
            lambda c: c.update(str(next(sources)), add_blocks=[last])
        ),
        "list (format)": lambda: store.transact(format_task_list),
        "open (new process)": open_and_read,
    }


def flush_floor(folder: Path) -> Callable[[], object]:
    """What one durable append costs on this disk: the least a folder-store write pays."""
    path = folder / "flush-probe"

    def append_and_flush() -> None:
        with path.open("ab") as probe:
            probe.write(b"x" * 200 + b"\n")
            probe.flush()
            getattr(os, "fdatasync", os.fsync)(probe.fileno())

    return append_and_flush


@contextmanager
def folder_store(size: int) -> Iterator[Timed]:
    with tempfile.TemporaryDirectory() as folder:
        store = FileTaskStore(Path(folder) / "tasks")
        _fill(store, size)

        def open_and_read() -> None:
            FileTaskStore(Path(folder) / "tasks").read()

        yield {"floor: one flushed append": flush_floor(Path(folder))} | store_operations(
            store, open_and_read, size
        )


@contextmanager
def postgres_store(url: str, size: int) -> Iterator[Timed]:
    import psycopg

    schema = f"replan_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            conninfo = psycopg.conninfo.make_conninfo(url, options=f"-c search_path={schema}")

            def open_and_read() -> None:
                with PostgresTaskStore(conninfo) as fresh:
                    fresh.read()

            with PostgresTaskStore(conninfo) as store, psycopg.connect(conninfo) as probe:
                _fill(store, size)
                probe.autocommit = True
                probe.execute("CREATE TABLE commit_probe (n bigint)")
                floor = partial(probe.execute, "INSERT INTO commit_probe VALUES (1)")
                yield {"floor: one-row commit": floor} | store_operations(
                    store, open_and_read, size
                )
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _fill(store: TaskStore, size: int) -> None:
    chained = chained_context(size)

    def fill(context: TaskContext) -> None:
        context.tasks, context.high_watermark = chained.tasks, chained.high_watermark

    store.transact(fill)


def print_table(
    title: str, table: dict[str, dict[int, Timing]], sizes: list[int], limit: float
) -> None:
    """Elapsed time per size, its growth and the verdict; for stores, the CPU part as well."""
    small, large = sizes[0], sizes[-1]
    with_cpu = limit == STORE_LIMIT_US
    growth_title = f"x{large:,}/{small:,}"
    print(f"\n{title}")
    header = f"{'operation':26}" + "".join(f"{f'{s:,} tasks':>14}" for s in sizes)
    header += f"{growth_title:>15}"
    if with_cpu:
        header += "".join(f"{f'CPU {s:,}':>13}" for s in sizes) + f"{growth_title:>15}"
    print(f"{header}  target at {large:,}")
    for name, row in table.items():
        line = f"{name:26}" + "".join(f"{_duration(row[s].wall):>14}" for s in sizes)
        growth = row[large].wall / row[small].wall
        line += f"{growth:14.2f}x"
        if with_cpu:
            line += "".join(f"{_duration(row[s].cpu):>13}" for s in sizes)
            line += f"{row[large].cpu / max(row[small].cpu, 1e-3):14.2f}x"
        if name in TARGETED:
            met = row[large].wall < limit and growth < GROWTH_LIMIT
            verdict = "met" if met else "MISSED"
            line += f"  < {_duration(limit)}, < {GROWTH_LIMIT:.0f}x growth: {verdict}"
        print(line)


def _duration(us: float) -> str:
    return f"{us:.1f} us" if us < 1_000 else f"{us / 1_000:.2f} ms"


def time_parallel_turns(size: int, call_counts: list[int]) -> None:
    """Print the cost of one ToolNode turn with k parallel TaskCreate calls."""
    graph = tool_graph()
    context = chained_context(size)
    print(f"\none ToolNode turn of k parallel TaskCreate calls, list of {size:,} tasks")
    print(f"{'k':>4}{'turn':>14}{'per call':>14}")
    for count in call_counts:
        create = ("TaskCreate", {"subject": "s", "description": ""})
        state = tool_calls_state(context, [create] * count)
        turn_us = median_us(partial(graph.invoke, state), 5)
        print(f"{count:>4}{_duration(turn_us):>14}{_duration(turn_us / count):>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--file-store", action="store_true", help="also time the folder store")
    parser.add_argument(
        "--postgres",
        nargs="?",
        const=DEFAULT_POSTGRES,
        metavar="URL",
        help=f"also time a PostgreSQL store (default URL {DEFAULT_POSTGRES})",
    )
    parser.add_argument("--turns", action="store_true", help="time parallel calls in ToolNode")
    options = parser.parse_args()
    sizes = sorted(options.sizes)

    memory: dict[str, dict[int, Timing]] = {}
    stores: dict[str, dict[str, dict[int, Timing]]] = {}
    makers: dict[str, Callable[[int], Any]] = {}
    if options.file_store:
        makers["folder store"] = folder_store
    if options.postgres:
        makers["PostgreSQL store"] = partial(postgres_store, options.postgres)
    print(f"timing {' and '.join(f'{size:,}' for size in sizes)} tasks ...", flush=True)
    contexts = {size: chained_context(size) for size in sizes}
    by_size = {size: in_memory_operations(context) for size, context in contexts.items()}
    for name in by_size[sizes[0]]:
        memory[name] = timed_side_by_side({size: by_size[size][name] for size in sizes}, 101)
    for title, make in makers.items():
        with ExitStack() as stack:
            stored = {size: stack.enter_context(make(size)) for size in sizes}
            for name in stored[sizes[0]]:
                repeats = 3 if name.startswith(("open", "list")) else 21
                operations = {size: stored[size][name] for size in sizes}
                stores.setdefault(title, {})[name] = timed_side_by_side(operations, repeats)

    print_table("in memory (each operation on a copy of the list)", memory, sizes, MEMORY_LIMIT_US)
    for title, table in stores.items():
        print_table(f"{title} (one transaction each)", table, sizes, STORE_LIMIT_US)
    if options.turns:
        for size in sizes:
            time_parallel_turns(size, [1, 3, 10, 30])


if __name__ == "__main__":
    main()
