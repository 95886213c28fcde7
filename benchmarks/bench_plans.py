"""Time plan writes, reads and listings on each storage backend at a few body sizes.

Run: python benchmarks/bench_plans.py [--postgres URL]
(prints milliseconds per operation; with --postgres, PostgresPlanStorage is timed too, in a
schema of its own that is dropped afterwards, and its ratio to SQLite is printed)
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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

Timings = tuple[float, float, float]
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


def bench(storage: PlanStorage, size: int) -> Timings:
    """(write, read, list) milliseconds per call with PLANS plans of `size` bytes."""
    body = "x" * size
    write = per_op_ms(
        lambda i: storage.upsert(PlanUpdate(name=f"plan-{i % PLANS}", content=body)),
        PLANS * ROUNDS,
    )
    read = per_op_ms(lambda i: storage.get(f"plan-{i % PLANS}"), PLANS * ROUNDS)
    listing = per_op_ms(lambda _: storage.list(), ROUNDS)
    return write, read, listing


@contextmanager
def postgres_storage(url: str) -> Iterator[PlanStorage]:
    """A PostgresPlanStorage in a new schema of the database at `url`, dropped on exit."""
    import psycopg
    from psycopg import sql

    from replan.state.plans import PostgresPlanStorage

    schema = f"replan_bench_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(url)
    query = {**dict(parse_qsl(parts.query)), "options": f"-csearch_path={schema}"}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        with PostgresPlanStorage(urlunsplit(parts._replace(query=urlencode(query)))) as storage:
            yield storage
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def row(kind: str, size: int, timings: Timings, baseline: Timings | None = None) -> str:
    write, read, listing = timings
    line = f"{kind:<11} {size:>9,} {write:>9.2f} {read:>8.2f} {listing:>8.2f}"
    if baseline is not None:
        ratios = " / ".join(
            f"{mine / theirs:.1f}x" for mine, theirs in zip(timings, baseline, strict=True)
        )
        line += f"   vs sqlite (write / read / list): {ratios}"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="URL", help="also time PostgresPlanStorage here")
    args = parser.parse_args()
    print(f"{'backend':<11} {'body':>9} {'write ms':>9} {'read ms':>8} {'list ms':>8}")
    sqlite: dict[int, Timings] = {}
    for kind, make in BACKENDS.items():
        for size in SIZES:
            with tempfile.TemporaryDirectory() as folder:
                timings = bench(make(Path(folder)), size)
            if kind == "sqlite":
                sqlite[size] = timings
            print(row(kind, size, timings))
    if args.postgres:
        for size in SIZES:
            with postgres_storage(args.postgres) as storage:
                print(row("postgres", size, bench(storage, size), sqlite[size]))
    print(f"(list = {PLANS} plans; filesystem writes include fsync of file and folder)")


if __name__ == "__main__":
    main()
