"""A latency for `replan.testing.plan_script.Clock` that shows which steps run together without
waiting a fixed time: each executor request is held until the requests of its wave have all
arrived.

A test of parallel steps that held every request for a fixed time (say 0.5 s) paid that time for
each request, and could still fail on a busy machine where the second request came later than
that. Here the steps of a wave meet (`Gathering(waves=[[1, 2], [3, 4], [5]])`): a request waits
until every step of its wave (and of the waves before it) has sent its request, so requests sent
together overlap however slow the machine is, and the test waits for nothing else. Steps that
were wrongly run one after another make the first one wait `patience` seconds for the others,
and the test's overlap assertions then fail.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from replan.testing import plan_script as script

PATIENCE_SECONDS = 10.0
"""How long a request waits for the rest of its wave before it is answered anyway."""


class Gathering:
    """A `Clock.latency`: executor requests wait for their wave (see the module docstring);
    every request is then held `hold` seconds more (a step of its own wave needs no wait, but a
    hold shows whether it would have overlapped another)."""

    def __init__(
        self, waves: Sequence[Sequence[int]], hold: float = 0.0, patience: float = PATIENCE_SECONDS
    ) -> None:
        self.arrived = 0
        self.hold = hold
        self.patience = patience
        self.condition = threading.Condition()
        self.needed: dict[int, int] = {}
        total = 0
        for wave in waves:
            total += len(wave)
            self.needed.update(dict.fromkeys(wave, total))

    def __call__(self, request: dict[str, Any]) -> float:
        call = script.classify(request)
        if call.role != "executor" or call.step not in self.needed:
            return 0.0
        with self.condition:
            self.arrived += 1
            self.condition.notify_all()
            self.condition.wait_for(
                lambda: self.arrived >= self.needed[call.step or 0], timeout=self.patience
            )
        return self.hold
