"""This repository's Aegra for the tests: `.venv-aegra/` (git-ignored), aegra.json, the Redis
server to use, short worker leases, and whether the tests must run (`REPLAN_REQUIRE_AEGRA=1`, set
by `.ci/run`). The machinery is `replan.testing.aegra`."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path

from replan.testing import aegra

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-aegra"
CONFIG = REPO / "aegra.json"
REQUIRE_ENV = "REPLAN_REQUIRE_AEGRA"
REDIS_ENV = "REPLAN_TEST_REDIS_URL"
TEST_LEASES = {
    "LEASE_DURATION_SECONDS": "5",
    "HEARTBEAT_INTERVAL_SECONDS": "2",
    "REAPER_INTERVAL_SECONDS": "1",
}
"""Short worker leases, so the reaper takes back a killed server's run within seconds (Aegra's
defaults: 30, 10 and 15)."""


def redis_url() -> str:
    """The Redis server the tests use: `$REPLAN_TEST_REDIS_URL` or the local default."""
    return os.environ.get(REDIS_ENV) or aegra.DEFAULT_REDIS_URL


def server(
    command: Path, env: dict[str, str], log: Path
) -> AbstractContextManager[aegra.AegraServer]:
    """`aegra serve` with this repository's aegra.json (see `replan.testing.aegra.aegra_server`)."""
    return aegra.aegra_server(command, CONFIG, env, log)
