"""Time plan writes, reads and listings on each storage backend at a few body sizes.

Run: python benchmarks/bench_plans.py   (prints milliseconds per operation)
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from replan.state.plans import (
    FilesystemPlanStorage,
    InMemoryPlanStorage,
    PlanStorage,
    PlanUpdate,
    SqlitePlanStorage,
)

SIZES = (1_000, 100_000, 1_000_000)
PLANS = 20
ROUNDS = 3

BACKENDS: dict[str, Callable[[Path], PlanStorage]] = {
    "memory": lambda _: InMemoryPlanStorage(),
    "filesystem": lambda folder: FilesystemPlanStorage(folder / "plans"),
    "sqlite": lambda folder: SqlitePlanStorage(folder / "plans.db"),
}


def per_op_ms(operation: Callable[[int], object], count: int) -> float:
    """Mean milliseconds of `operation(i)` for i in range(count)."""
    start = time.perf_counter()
    for index in range(count):
        operation(index)
    return (time.perf_counter() - start) * 1000 / count


def bench(storage: PlanStorage, size: int) -> tuple[float, float, float]:
    """(write, read, list) milliseconds per call with PLANS plans of `size` bytes."""
    body = "x" * size
    write = per_op_ms(
        lambda i: storage.upsert(PlanUpdate(name=f"plan-{i % PLANS}", content=body)),
        PLANS * ROUNDS,
    )
    read = per_op_ms(lambda i: storage.get(f"plan-{i % PLANS}"), PLANS * ROUNDS)
    listing = per_op_ms(lambda _: storage.list(), ROUNDS)
    return write, read, listing


def main() -> None:
    print(f"{'backend':<11} {'body':>9} {'write ms':>9} {'read ms':>8} {'list ms':>8}")
    for kind, make in BACKENDS.items():
        for size in SIZES:
            with tempfile.TemporaryDirectory() as folder:
                write, read, listing = bench(make(Path(folder)), size)
            print(f"{kind:<11} {size:>9,} {write:>9.2f} {read:>8.2f} {listing:>8.2f}")
    print(f"(list = {PLANS} plans; filesystem writes include fsync of file and folder)")


if __name__ == "__main__":
    main()
