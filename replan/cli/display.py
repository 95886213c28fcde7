"""Where a run's progress is shown: `Lane`s (one per running node) drawn by a `Display`.

`PlainDisplay` writes lines (for logs and pipes; a line names its lane when several run at
once) and `LiveDisplay` draws the open lanes with rich on a terminal, keeping finished ones as
lines above and the tokens so far below. `NullDisplay` shows nothing (`--quiet`).
`replan.cli.progress` decides what goes on the lanes.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from replan.state.tasks import TaskContext
from replan.state.usage import Tally, empty_tally

RECENT_EVENTS = 4
"""How many of a lane's latest events the live display keeps under its title."""
FIRST_WAIT_NOTICE_SECONDS = 5.0
"""The plain display says it is still waiting for the model after this long, then after
twice as long each time."""
TICK_SECONDS = 0.5
"""How often waiting times and the live display are brought up to date."""


@dataclass
class Lane:
    """One running node of the run and what it has done so far."""

    title: str
    started: float
    label: str = ""
    step_id: int | None = None
    waiting_since: float | None = None
    next_notice: float = FIRST_WAIT_NOTICE_SECONDS
    tasks: TaskContext | None = None
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT_EVENTS))
    used: Tally = field(default_factory=empty_tally)
    """Usage of this step's model turns so far, until the step's own update counts it."""

    def wait_for_model(self, now: float) -> None:
        """A model request of this lane starts (or starts again) now."""
        self.waiting_since = now
        self.next_notice = FIRST_WAIT_NOTICE_SECONDS


class Display(Protocol):
    """Where progress goes."""

    def note(self, text: str) -> None:
        """A line about the whole run."""

    def opened(self, lane: Lane, lanes: list[Lane]) -> None:
        """`lane` started; `lanes` are all open lanes."""

    def event(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        """Something happened in `lane`."""

    def closed(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        """`lane` ended, summed up by `text`; `lanes` are those still open."""

    def tick(self, lanes: list[Lane], now: float) -> None:
        """Time passed."""

    def usage(self, text: str, settled: bool) -> None:
        """The tokens used so far; `settled` once the node that used them has ended (shown
        once, after its lane closes), not for a model turn of a step still running."""


class NullDisplay:
    """Shows nothing (`--quiet`)."""

    def note(self, text: str) -> None:
        pass

    def opened(self, lane: Lane, lanes: list[Lane]) -> None:
        pass

    def event(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        pass

    def closed(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        pass

    def tick(self, lanes: list[Lane], now: float) -> None:
        pass

    def usage(self, text: str, settled: bool) -> None:
        pass


class PlainDisplay:
    """Progress as lines, for a stderr that is not a terminal (the tokens so far once they
    are settled)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def note(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _lane_line(self, lane: Lane, text: str, side_by_side: bool) -> None:
        """An indented line of `lane`, naming it when other lanes run at the same time."""
        self.note(f"  [{lane.label}] {text}" if side_by_side else f"  {text}")

    def opened(self, lane: Lane, lanes: list[Lane]) -> None:
        self.note(lane.title)

    def event(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        self._lane_line(lane, text, len(lanes) > 1)

    def closed(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        if text:
            self.note(text)

    def tick(self, lanes: list[Lane], now: float) -> None:
        for lane in lanes:
            if lane.waiting_since is None:
                continue
            waited = now - lane.waiting_since
            if waited < lane.next_notice:
                continue
            while waited >= lane.next_notice * 2:
                lane.next_notice *= 2
            passed = lane.next_notice
            lane.next_notice *= 2
            self._lane_line(lane, f"waiting for the model: {passed:.0f} s", len(lanes) > 1)

    def usage(self, text: str, settled: bool) -> None:
        if settled:
            self.note(text)


class LiveDisplay:
    """The open lanes drawn live with rich on a terminal; notes and finished lanes scroll
    above them as lines."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.live = Live(console=console, auto_refresh=False, transient=True)
        self.usage_text = ""
        self.lanes: list[Lane] = []

    def __enter__(self) -> LiveDisplay:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()
        if self.usage_text:  # the live region is gone: the last total stays as a line
            self.console.print(Text(self.usage_text))

    def usage(self, text: str, settled: bool) -> None:
        self.usage_text = text
        self._draw(self.lanes)

    def note(self, text: str) -> None:
        self.live.console.print(Text(text))

    def opened(self, lane: Lane, lanes: list[Lane]) -> None:
        self._draw(lanes)

    def event(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        lane.recent.append(text)
        self._draw(lanes)

    def closed(self, lane: Lane, text: str, lanes: list[Lane]) -> None:
        if text:  # a step's outcome stays; planning and reviewing leave their own notes
            self.note(text)
        self._draw(lanes)

    def tick(self, lanes: list[Lane], now: float) -> None:
        self._draw(lanes)

    def render(self, lanes: list[Lane]) -> RenderableType:
        """The live region: each open lane with its elapsed time, what it waits for and its
        latest events."""
        now = self.clock()
        blocks: list[RenderableType] = []
        for lane in lanes:
            blocks.append(
                Text.assemble((lane.title, "bold"), (f"  {now - lane.started:.0f} s", "dim"))
            )
            for text in lane.recent:
                blocks.append(Text(f"  {text}", overflow="ellipsis", no_wrap=True))
            if lane.waiting_since is not None:
                waited = now - lane.waiting_since
                blocks.append(Text(f"  waiting for the model… {waited:.0f} s", style="cyan"))
        if self.usage_text:
            blocks.append(Text(self.usage_text, style="dim"))
        return Group(*blocks)

    def _draw(self, lanes: list[Lane]) -> None:
        self.lanes = lanes
        self.live.update(self.render(lanes), refresh=True)
