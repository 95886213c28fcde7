"""How fast `replan`'s read-only commands answer, next to what they stand on.

Times the wall clock of real processes, `--runs` times each (taken in turns, so that a busy
moment of the machine falls on every command alike), after one warm-up run each:

- `replan --help`, `replan threads --db X` and `replan show --thread-id T --db X`, on a
  database made by one scripted run (`replan run` against `replan.testing`'s scripted server);
- `show` and `threads` through the old import path: the same commands once the model stack
  (`replan.cli.runs`: the run graph, langchain-openai, openai) is imported, as every command
  but `--help` imported it before;
- baselines: `python -c pass` (the interpreter), `import langgraph.graph` (LangGraph's graph
  layer, which reading a run's state goes through), `import langgraph.types` (what reading back
  a stored interrupt or pending `Send` loads, whatever reads it) and `import replan.cli.summary`
  (the modules a report needs: the graph layer's state schemas and plan views, which import
  `langgraph.graph` themselves).

Prints the median, fastest and slowest time of each, and each median as a multiple of the
interpreter's; then, for `show` and `threads`, the old path's median over the new one's. The
target (issue 29): `--help`, `threads` and `show` under 0.5 s on an idle two-core machine; the
load average is printed with the figures.

Run: python benchmarks/bench_cli_startup.py [--runs 7]
Exit codes: 0 when the three commands' medians are under the target, 1 when not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`

from replan.testing import ScriptedOpenAIServer  # noqa: E402
from replan.testing import plan_script as script  # noqa: E402

RUNS = 7
TARGET_SECONDS = 0.5
THREAD = "bench"
REPLAN = str(Path(sys.executable).with_name("replan"))
"""The console script installed next to this interpreter."""
OLD_PATH = "import sys, replan.cli.runs\nfrom replan.cli import main\nsys.exit(main(sys.argv[1:]))"
"""A command run as before issue 29: the model stack imported first."""


@dataclass(frozen=True)
class Command:
    """One timed command line, and whether the target applies to it."""

    label: str
    argv: list[str]
    targeted: bool = False


def commands(db: Path) -> list[Command]:
    """What is timed, the baselines first."""
    show = ["show", "--thread-id", THREAD, "--db", str(db)]
    threads = ["threads", "--db", str(db)]
    python = sys.executable
    return [
        Command("python -c pass", [python, "-c", "pass"]),
        Command("import langgraph.graph", [python, "-c", "import langgraph.graph"]),
        Command("import langgraph.types", [python, "-c", "import langgraph.types"]),
        Command("import replan.cli.summary", [python, "-c", "import replan.cli.summary"]),
        Command("replan threads, old import path", [python, "-c", OLD_PATH, *threads]),
        Command("replan show, old import path", [python, "-c", OLD_PATH, *show]),
        Command("replan --help", [REPLAN, "--help"], targeted=True),
        Command("replan threads", [REPLAN, *threads], targeted=True),
        Command("replan show", [REPLAN, *show], targeted=True),
    ]


def make_database(folder: Path) -> Path:
    """A database holding one finished scripted run, `THREAD`, with its plan and steps."""
    db = folder / "runs.sqlite"
    with ScriptedOpenAIServer(script.respond) as server:
        env = {**os.environ, "OPENAI_API_KEY": "local", "OPENAI_BASE_URL": server.base_url}
        args = ["run", "Bench in 3 steps", "--thread-id", THREAD, "--db", str(db), "--quiet"]
        args += ["--task-tools", "compact"]  # a plan and steps to show
        subprocess.run([REPLAN, *args], env=env, check=True, capture_output=True)
    return db


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(db: Path, runs: int = RUNS) -> dict[str, list[float]]:
    """Each command's times over `runs` runs, in turns, after a warm-up run of each."""
    timed = commands(db)
    for command in timed:
        _seconds(command.argv)
    times: dict[str, list[float]] = {command.label: [] for command in timed}
    for _ in range(runs):
        for command in timed:
            times[command.label].append(_seconds(command.argv))
    return times


def report(times: dict[str, list[float]], db: Path) -> tuple[str, bool]:
    """The table, the ratios and the verdict; whether the target is met."""
    floor = statistics.median(times["python -c pass"])
    width = max(map(len, times))
    lines = [
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, "
        f"{len(next(iter(times.values())))} runs each",
        f"{'command':<{width}}  median     min     max  × python",
    ]
    for label, seconds in times.items():
        median = statistics.median(seconds)
        lines.append(
            f"{label:<{width}}  {median:5.3f} s {min(seconds):5.3f} s {max(seconds):5.3f} s"
            f"  {median / floor:7.1f}"
        )
    for command in ("threads", "show"):
        old = statistics.median(times[f"replan {command}, old import path"])
        new = statistics.median(times[f"replan {command}"])
        lines.append(f"replan {command}: the old import path takes {old / new:.1f}× as long")
    targeted = [command.label for command in commands(db) if command.targeted]
    slow = [label for label in targeted if statistics.median(times[label]) >= TARGET_SECONDS]
    met = not slow
    lines.append(
        f"target (under {TARGET_SECONDS} s on an idle two-core machine): "
        + ("met" if met else f"missed by {', '.join(slow)}")
    )
    return "\n".join(lines), met


def main(argv: Sequence[str] | None = None) -> int:
    """Make the database, measure, print; 0 when the target is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs of each command")
    options = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="replan-bench-"))
    try:
        db = make_database(folder)
        text, met = report(measure(db, options.runs), db)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(text)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
