"""Time each task operation at 10, 1,000 and 10,000 tasks, so cost growth is visible.

    python benchmarks/bench_tasks.py [--sizes 10 1000 10000] [--file-store] [--turns]

Each figure is the median of several runs, in microseconds per operation, on a list of that
many tasks with a chain of dependencies through all of them (the worst case for the cycle
check). The last column block divides by the smallest size: linear growth shows as the ratio
of the sizes. `--file-store` adds the folder-backed store (dominated by reading every file).
`--turns` times one model turn of k parallel TaskCreate calls through LangGraph's ToolNode:
each call replays the ones before it, so a turn costs O(k^2) task operations (plus two copies of
the list per call: the call's own, and the reducer's when it applies the call's change); the
table shows what that means in practice.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from replan.state import FileTaskStore, Task, TaskContext, find_cycle, format_task_list
from replan.tools.task_tools import run_task_call


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
    return TaskContext(tasks=tasks, high_watermark=size)


def median_us(operation: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings) * 1e6


def in_memory_operations(context: TaskContext) -> dict[str, Callable[[], object]]:
    """Each operation runs on a fresh clone, so runs do not change the base list."""
    last = str(len(context.tasks))
    return {
        "clone (tool-call copy)": context.clone,
        "create": lambda: context.clone().create("New", "d"),
        "get": lambda: context.get(last),
        "update status": lambda: context.clone().update(last, status="in_progress"),
        "add edge (cycle check)": lambda: context.clone().update("1", add_blocks=[last]),
        "refused cycle": lambda: _refused(context.clone(), last),
        "delete": lambda: context.clone().delete("1"),
        "list (format)": lambda: format_task_list(context),
        "find_cycle": lambda: find_cycle(context.tasks),
        "TaskUpdate tool call": lambda: run_task_call(
            context.clone(), "TaskUpdate", {"taskId": last, "owner": "bench"}
        ),
    }


def _refused(context: TaskContext, last: str) -> None:
    try:
        context.update("1", add_blocked_by=[last])
    except ValueError:
        return
    raise AssertionError("a cycle was accepted")


def file_store_operations(folder: Path, context: TaskContext) -> dict[str, Callable[[], object]]:
    store = FileTaskStore(folder)
    store.transact(lambda stored: stored.tasks.extend(context.tasks))
    last = str(len(context.tasks))
    return {
        "file: list": lambda: store.transact(format_task_list),
        "file: update status": lambda: store.transact(
            lambda stored: stored.update(last, status="in_progress")
        ),
        "file: create": lambda: store.transact(lambda stored: stored.create("New", "d")),
    }


def time_parallel_turns(size: int, call_counts: list[int]) -> None:
    """Print the cost of one ToolNode turn with k parallel TaskCreate calls."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    from replan.tools import TasksState, task_tools

    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    app = builder.compile()
    context = chained_context(size)
    print(f"\none ToolNode turn of k parallel TaskCreate calls, list of {size} tasks")
    print(f"{'k':>4}{'turn (ms)':>14}{'per call (ms)':>16}")
    for count in call_counts:
        calls = [
            {
                "type": "tool_call",
                "name": "TaskCreate",
                "id": f"c{n}",
                "args": {"subject": "s", "description": ""},
            }
            for n in range(count)
        ]
        state = {"messages": [AIMessage("", tool_calls=calls)], "tasks_context": context}
        turn_us = median_us(partial(app.invoke, state), 5)
        print(f"{count:>4}{turn_us / 1e3:14.1f}{turn_us / 1e3 / count:16.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1_000, 10_000])
    parser.add_argument("--file-store", action="store_true", help="also time the folder store")
    parser.add_argument("--turns", action="store_true", help="time parallel calls in ToolNode")
    options = parser.parse_args()

    table: dict[str, dict[int, float]] = {}
    for size in options.sizes:
        print(f"building {size} tasks ...", flush=True)
        context = chained_context(size)
        repeats = 7 if size <= 1_000 else 3
        operations = in_memory_operations(context)
        with tempfile.TemporaryDirectory() as folder:
            if options.file_store:
                operations |= file_store_operations(Path(folder), context)
            for name, operation in operations.items():
                table.setdefault(name, {})[size] = median_us(operation, repeats)

    sizes = options.sizes
    header = f"{'operation':26}" + "".join(f"{f'{s} tasks (us)':>18}" for s in sizes)
    header += "".join(f"{f'x{s}/{sizes[0]}':>12}" for s in sizes[1:])
    print(header)
    for name, row in table.items():
        line = f"{name:26}" + "".join(f"{row[s]:18.1f}" for s in sizes)
        line += "".join(f"{row[s] / row[sizes[0]]:12.1f}" for s in sizes[1:])
        print(line)
    if options.turns:
        for size in (10, 1_000):
            time_parallel_turns(size, [1, 3, 10, 30])


if __name__ == "__main__":
    main()
