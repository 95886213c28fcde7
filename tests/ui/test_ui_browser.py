"""`replan ui` in a real browser (Debian's Chromium, driven by Playwright): the thread list, a
finished run drawn right, a run followed live to its end, a plan approved from the page, a
request without the token refused, and no console errors anywhere."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, cli_env, finish, start_cli
from tests.support.ui_support import (
    CHROMIUM,
    REQUIRE_BROWSER_ENV,
    HeldAfterCall,
    browser_missing,
    serving_ui,
    stored_run,
)

pytestmark = pytest.mark.slow
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if missing := browser_missing():
        if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
            pytest.fail(f"{REQUIRE_BROWSER_ENV}=1 but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Page:
    """A page of the browser that records console errors and uncaught exceptions."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else 0)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def statuses(self) -> list[str]:
        nodes = self.page.locator("svg g.node")
        return [nodes.nth(i).get_attribute("data-status") for i in range(nodes.count())]

    def wait_statuses(self, expected: list[str]) -> None:
        self.page.wait_for_function(
            "expected => JSON.stringify([...document.querySelectorAll('svg g.node')]"
            ".map(node => node.dataset.status)) === JSON.stringify(expected)",
            arg=expected,
            timeout=WAIT_MS,
        )


def test_the_page_lists_threads_and_draws_a_finished_run(browser: Any, work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "diamond", *PLANNED, "Ship it in 4 diamond steps")
        stored_run(server, work, "chain", *PLANNED, "Ship it in 2 steps")
        stored_run(server, work, "chain", *PLANNED, "Now ship it in 1 steps")  # its second turn
    with serving_ui(work / "runs.sqlite", work) as ui:
        page = Page(browser)
        page.page.goto(ui.url)
        rows = page.page.locator("tr.thread")
        rows.first.wait_for(timeout=WAIT_MS)
        assert sorted(rows.nth(i).get_attribute("data-thread") for i in range(2)) == [
            "chain",
            "diamond",
        ]
        page.page.locator("tr.thread[data-thread=diamond]").click()
        page.wait_statuses(["done", "done", "done", "done"])
        assert page.page.locator("svg path.edge").count() == 4  # 1→2, 1→3, 2→4, 3→4
        answer = page.page.locator("#answer").inner_text()
        assert answer.startswith("All 4 steps of [ship it in 4 diamond] are done")
        planner = page.page.locator(
            "table.usage tr", has=page.page.get_by_text("planner", exact=True)
        )
        assert planner.locator("td").nth(1).inner_text() == "1"  # the planner's one model call
        page.page.locator("tr.thread[data-thread=chain]").click()
        page.wait_statuses(["done"])
        earlier = page.page.locator("#turns li")
        assert earlier.count() == 1 and earlier.first.inner_text().startswith("Ship it in 2 steps")
    assert page.errors == []


def test_the_page_follows_a_run_in_another_process_to_its_end(browser: Any, work: Path) -> None:
    held = HeldAfterCall()
    with ScriptedOpenAIServer(held) as server:
        running = start_cli(
            server, work, "run", "--db", "runs.sqlite", "--thread-id", "live", *PLANNED,
            "--tools", "./shop.py:TOOLS", "Ship it in 3 steps",
        )  # fmt: skip
        try:
            assert held.reached.wait(60), finish(running, timeout=5)
            with serving_ui(work / "runs.sqlite", work) as ui:
                page = Page(browser)
                page.page.goto(ui.url + "#thread=live")
                page.wait_statuses(["running", "pending", "pending"])
                call = page.page.locator(".step[data-step='1'] .call")
                assert call.inner_text() == 'price({"item":"A"}) → A costs 4.20'
                held.release.set()
                page.wait_statuses(["done", "done", "done"])
                page.page.locator("#answer").wait_for(timeout=WAIT_MS)
                assert finish(running).code == ExitCode.OK
        finally:
            held.release.set()
            if running.poll() is None:
                running.kill()
    assert page.errors == []


def test_a_plan_is_approved_from_the_page(browser: Any, work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "waits", *PLANNED, "--approve-plan", "Ship it in 2 steps")
        with serving_ui(work / "runs.sqlite", work, cli_env(server)) as ui:
            page = Page(browser)
            page.page.goto(ui.url + "#thread=waits")
            page.wait_statuses(["pending", "pending"])
            page.page.get_by_role("button", name="Approve").click()
            page.wait_statuses(["done", "done"])
            page.page.locator("#answer").wait_for(timeout=WAIT_MS)
            assert page.page.get_by_role("button", name="Approve").count() == 0
    assert page.errors == []


def test_the_page_without_its_token_is_refused(browser: Any, work: Path) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        stored_run(server, work, "t", *PLANNED, "Ship it in 1 steps")
    with serving_ui(work / "runs.sqlite", work) as ui:
        page = Page(browser)
        answer = page.page.goto(ui.base + "/")
        assert answer is not None and answer.status == 403
        assert "carries the page's token" in page.page.content()
        assert page.page.locator("tr.thread").count() == 0
