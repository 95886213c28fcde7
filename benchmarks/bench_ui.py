"""`replan ui` on a seeded 30-step scripted run: how soon the page draws, how soon it follows,
and what the `todos` key costs in checkpoint bytes.

The run is the scripted model's "Ship it in 30 steps" (a chain of 30 steps, each its own wave
and reviewed by the replanner, deterministic: `replan.testing.plan_script`; the run's plan and
round bounds raised to fit it), made by the `replan` CLI in its own process
against the scripted OpenAI-compatible server, as a user's run is. The page is opened in
headless Chromium (Debian's `chromium`, through Playwright).

- First full paint: from asking for the page to every step of the finished run drawn and its
  answer shown (the median of `--opens` openings, each in a new page).
- Following a run: the same objective run again while the page watches it, each model reply
  held `--latency` seconds. For each step, the time from the model reply that ends it (the
  step's write is saved after that reply, so this is an upper bound of the time from the
  write) to the page showing it done.
- The `todos` key: its bytes in the database (in every checkpoint and in the writes), next to
  the run's checkpoint bytes without them; and the run's model calls (todos are written by the
  nodes' updates, with no model call).

Targets: first paint within 1 s; a step's new status within 1 s; todos at most 5% more bytes.
Run: python benchmarks/bench_ui.py [--latency 0.3] [--opens 3]
Exit codes: 0 every target met, 1 some target missed, 2 no browser or Playwright.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`

from benchmarks.command_line import Parser, positive  # noqa: E402
from replan.graphs.persistence import checkpoint_serializer  # noqa: E402
from replan.testing import Reply, ScriptedOpenAIServer  # noqa: E402
from replan.testing import plan_script as script  # noqa: E402
from replan.ui.server import UiServer  # noqa: E402

OBJECTIVE = "Ship it in 30 steps"
STEPS = 30
CHROMIUM = "/usr/bin/chromium"
REPLAN = str(Path(sys.executable).with_name("replan"))
TARGET_PAINT, TARGET_FOLLOW, TARGET_BYTES = 1.0, 1.0, 0.05
WAIT_MS = 600_000

RECORD_STATUSES = """() => {
  window.seen = {};
  const note = () => {
    for (const node of document.querySelectorAll('svg g.node')) {
      const key = node.dataset.step + ':' + node.dataset.status;
      if (!(key in window.seen)) window.seen[key] = Date.now() / 1000;
    }
  };
  new MutationObserver(note).observe(document.body, {childList: true, subtree: true});
  note();
}"""


class Timed:
    """The scripted model, each reply held `latency` seconds; it notes when the reply that
    ends each executor step was sent (wall clock)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0
        self.ended: dict[int, float] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        time.sleep(self.latency)
        call = script.classify(request)
        reply = script.respond(request)
        with self.lock:
            self.calls += 1
            if call.role == "executor" and call.step is not None:
                self.ended[call.step] = time.time()
        return reply


def run_cli(server: ScriptedOpenAIServer, work: Path, thread: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": server.base_url}
    return subprocess.Popen(
        [
            REPLAN,
            "run",
            "--db",
            "runs.sqlite",
            "--thread-id",
            thread,
            "--task-tools",
            "compact",
            "--max-plan-steps",
            str(STEPS),
            "--max-iterations",
            str(STEPS + 5),
            "--quiet",
            OBJECTIVE,
        ],  # fmt: skip
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def all_drawn(page: Any, status: str) -> None:
    page.wait_for_function(
        "([count, status]) => document.querySelectorAll(`svg g.node[data-status=${status}]`)"
        ".length === count && document.getElementById('answer')",
        arg=[STEPS, status],
        timeout=WAIT_MS,
    )


def first_paints(browser: Any, url: str, opens: int) -> list[float]:
    """Seconds from asking for the page to the finished run drawn whole, per opening."""
    took = []
    for _ in range(opens):
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(url + "#thread=done")
        all_drawn(page, "done")
        took.append(time.perf_counter() - start)
        page.close()
    return took


def follow(
    browser: Any, ui: UiServer, server: ScriptedOpenAIServer, timed: Timed, work: Path
) -> list[float]:
    """Per step: seconds from the reply ending it to the page showing it done."""
    process = run_cli(server, work, "live")
    while not ui.reader.run(ui.reader.thread("live")):
        time.sleep(0.05)
    page = browser.new_page()
    page.goto(ui.url + "#thread=live")
    page.wait_for_selector("svg g.node", timeout=WAIT_MS)
    page.evaluate(RECORD_STATUSES)
    all_drawn(page, "done")
    _, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise SystemExit(f"the followed run failed: {err.decode(errors='replace').strip()}")
    seen: dict[str, float] = page.evaluate("window.seen")
    return [seen[f"{step}:done"] - timed.ended[step] for step in range(1, STEPS + 1)]


def todo_bytes(db: Path, thread: str) -> tuple[int, int]:
    """(bytes of the thread's checkpoints and writes, of which `todos` values)."""
    serde = checkpoint_serializer()
    total = todos = 0
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ?", (thread,)
        )
        for kind, blob in rows:
            total += len(blob)
            values = serde.loads_typed((kind, blob)).get("channel_values") or {}
            if "todos" in values:
                todos += len(serde.dumps_typed(values["todos"])[1])
        writes = connection.execute(
            "SELECT channel, value FROM writes WHERE thread_id = ?", (thread,)
        )
        for channel, blob in writes:
            total += len(blob)
            todos += len(blob) if channel == "todos" else 0
    return total, todos


def main() -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=positive(float), default=0.3, help="s per reply")
    parser.add_argument("--opens", type=positive(int), default=3)
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("bench_ui: Playwright's Python client is not installed", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"bench_ui: no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    timed = Timed(0.0)
    with ScriptedOpenAIServer(timed) as server:
        if run_cli(server, work, "done").wait(timeout=600) != 0:
            raise SystemExit("the seeded run failed")
        calls = timed.calls
        ui = UiServer(str(work / "runs.sqlite"))
        threading.Thread(
            target=ui.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"]
                )
                paints = first_paints(browser, ui.url, args.opens)
                timed.latency = args.latency
                lags = follow(browser, ui, server, timed, work)
                browser.close()
        finally:
            ui.close()
    total, todos = todo_bytes(work / "runs.sqlite", "done")
    share = todos / (total - todos)
    paint, lag = statistics.median(paints), max(lags)
    median = statistics.median(lags)
    rows = [
        ("first full paint (median)", f"{paint:.2f} s", f"<= {TARGET_PAINT:g} s",
         paint <= TARGET_PAINT),
        ("step shown done after its reply (max)", f"{lag:.2f} s", f"<= {TARGET_FOLLOW:g} s",
         lag <= TARGET_FOLLOW),
        ("step shown done after its reply (median)", f"{median:.2f} s", "", True),
        ("checkpoint bytes without todos", f"{total - todos:,}", "", True),
        ("todos bytes", f"{todos:,} (+{share:.1%})", f"<= +{TARGET_BYTES:.0%}",
         share <= TARGET_BYTES),
        ("model calls of the run", str(calls), "", True),
    ]  # fmt: skip
    for name, value, target, met in rows:
        print(f"{name:42} {value:>20}  {target}{'' if met else '  MISSED'}")
    print(json.dumps({"paints": paints, "lags": lags, "bytes": total, "todos": todos}))
    return 0 if all(met for *_, met in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
