"""Plans that act in the world as written: steps that may act run in plan order, look-ups between
them side by side; a tool's answer that says it failed fails its step, so the replanner sees it
before the plan goes on; a deferred step (a tool step without its args) is written by the
replanner once the steps it waits for are done, and declares its tool up front."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context
from replan.graphs.plan.decisions import PlanArgs, accept_plan
from replan.graphs.plan.numbering import Numbering
from replan.graphs.plan.own_tools import OwnTools
from replan.graphs.plan.views import plan_items
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.seal import declared
from replan.tools.effects import declare_effects
from tests.support.fake_models import FakeChatModel, Mode, both_modes, call, run

CONFIG: RunnableConfig = {"configurable": {"thread_id": "deferred"}}
WHEN_NEEDED = Context(replan="when_needed")
REMOVE_THEN_UP = [
    {"tool": "remove", "args": {"name": "drafts/*"}},  # `remove` answers it with an error
    {"tool": "enter", "args": {"folder_name": ".."}},
]


class Folder:
    """A folder whose tools record every call: `enter` and `remove` may act (undeclared),
    `listing` and `look` are read-only; `together` makes `look` calls meet (side by side)."""

    def __init__(self, together: int = 0) -> None:
        self.calls: list[str] = []
        self.together = threading.Barrier(together, timeout=10) if together else None

    @property
    def tools(self) -> list[BaseTool]:
        folder = self

        @tool
        def enter(folder_name: str) -> str:
            """Go into a folder."""
            folder.calls.append(f"enter {folder_name}")
            return "ok"

        @tool
        def listing() -> str:
            """The files here."""
            folder.calls.append("listing")
            return "notes.txt plan.md"

        @tool
        def look(what: str) -> str:
            """Look something up."""
            folder.calls.append(f"look {what}")
            if folder.together is not None:
                folder.together.wait()
            return what.upper()

        @tool
        def remove(name: str) -> str:
            """Remove a file."""
            folder.calls.append(f"remove {name}")
            if "*" in name:
                return json.dumps({"error": f"rm: cannot remove '{name}': No such file"})
            return f"removed {name}"

        read_only = [declare_effects(t, read_only=True) for t in (listing, look)]
        return [enter, *read_only, remove]


def plan_call(*steps: Any) -> AIMessage:
    return call("plan", steps=list(steps))


def states(graph: Any) -> list[dict[str, Any]]:
    """The state at each checkpoint of the test's thread, oldest first."""
    return [snapshot.values for snapshot in reversed(list(graph.get_state_history(CONFIG)))]


# --- what acts happens in plan order ----------------------------------------------------------


@both_modes
def test_steps_that_act_run_in_plan_order_and_look_ups_between_them_side_by_side(
    mode: Mode,
) -> None:
    """Tool steps without `depends_on`: the look-ups wait for `enter`, `remove` waits for them;
    the look-ups meet at a barrier, so they ran side by side."""
    folder = Folder(together=2)
    steps = [
        {"tool": "enter", "args": {"folder_name": "drafts"}},
        {"tool": "look", "args": {"what": "a"}},
        {"tool": "look", "args": {"what": "b"}},
        {"tool": "remove", "args": {"name": "$2"}},
    ]
    model = FakeChatModel(planner=[plan_call(*steps)], replanner=[call("respond", response="ok")])
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    result = run(graph, "Clear the drafts", mode, config=CONFIG, context=WHEN_NEEDED)

    assert result["response"] == "ok"
    assert folder.calls[0] == "enter drafts" and folder.calls[-1] == "remove A"
    assert sorted(folder.calls[1:3]) == ["look a", "look b"]
    first_plan = next(values["plan"] for values in states(graph) if values.get("plan"))
    assert [step["depends_on"] for step in first_plan] == [[], [1], [1], [1, 2, 3]]


def test_without_a_tool_that_acts_tool_steps_wait_only_for_what_they_name() -> None:
    tools = OwnTools(Folder().tools[1:3])  # listing, look: read-only
    steps = [{"step": "Note the date"}, {"tool": "look", "args": {"what": "a"}}, "Sum up"]
    plan = accept_plan(PlanArgs(steps=steps), Numbering.first_plan(tools))
    assert [step["depends_on"] for step in plan] == [[], [], [2]]


@both_modes
def test_a_tool_answering_with_an_error_object_fails_its_step_and_the_replanner_is_asked(
    mode: Mode,
) -> None:
    """`{"error": ...}` from `remove`: the step fails, so the replanner is asked before the
    next tool step runs, even with `replan="when_needed"`, and plans another way."""
    folder = Folder()
    model = FakeChatModel(
        planner=[plan_call(*REMOVE_THEN_UP)],
        replanner=[
            plan_call({"tool": "listing"}),
            call("respond", response="Nothing removed: no file matched."),
        ],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    result = run(graph, "Remove drafts/*", mode, config=CONFIG, context=WHEN_NEEDED)

    assert folder.calls == ["remove drafts/*", "listing"]  # `enter ..` never ran
    failed = result["executed_steps"][0]
    assert failed["status"] == "failed" and "cannot remove" in failed["result"]
    (asked, _) = (request.prompt for request in model.requests_of("replanner"))
    assert "cannot remove" in asked


# --- deferred steps -----------------------------------------------------------------------------


@both_modes
def test_a_deferred_step_is_written_by_the_replanner_once_its_look_up_is_done(
    mode: Mode,
) -> None:
    """`remove` without args waits for the listing; even with `replan="when_needed"` the
    replanner is asked then, sees it as `remove(…)`, and writes the calls from the result;
    the step after it runs after them."""
    folder = Folder()
    first = [
        {"tool": "listing"},
        {"tool": "remove", "depends_on": [1]},
        {"tool": "enter", "args": {"folder_name": ".."}},
    ]
    written = [
        {"tool": "remove", "args": {"name": "notes.txt"}},
        {"tool": "remove", "args": {"name": "plan.md"}},
        {"tool": "enter", "args": {"folder_name": ".."}},  # re-listed: keeps number 3
    ]
    model = FakeChatModel(
        planner=[plan_call(*first)],
        replanner=[plan_call(*written), call("respond", response="Removed both.")],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    result = run(graph, "Remove the files here", mode, config=CONFIG, context=WHEN_NEEDED)

    assert result["response"] == "Removed both."
    assert folder.calls == ["listing", "remove notes.txt", "remove plan.md", "enter .."]
    first_plan = next(values["plan"] for values in states(graph) if values.get("plan"))
    deferred = first_plan[1]
    assert deferred == {"id": 2, "step": "remove(…)", "depends_on": [1], "deferred": "remove"}
    assert first_plan[2]["depends_on"] == [2]  # `enter` acts: after the deferred step
    (asked, _) = (request.prompt for request in model.requests_of("replanner"))
    assert "2. remove(…)" in asked and "notes.txt plan.md" in asked
    assert [done["id"] for done in result["executed_steps"]] == [1, 4, 5, 3]


def test_a_deferred_step_needs_something_to_wait_for_and_is_written_once_that_is_done() -> None:
    tools = OwnTools(Folder().tools)
    with pytest.raises(ValueError, match='leaves out the "args" of `remove` but waits for no'):
        PlanArgs.model_validate(
            {"steps": [{"tool": "remove", "depends_on": []}]},
            context=Numbering.first_plan(tools),
        )
    done = [{"id": 1, "step": "listing()", "result": "notes.txt", "tool": "listing", "args": {}}]
    left = [{"id": 2, "step": "remove(…)", "depends_on": [1], "deferred": "remove"}]
    numbering = Numbering.replan(left, done, tools)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="step 3: the steps it waits for are done: write its"):
        PlanArgs.model_validate(
            {"steps": [{"tool": "remove", "depends_on": [1]}]}, context=numbering
        )
    # with a step that can start first (number 3), it is kept (number 2) and written after it
    steps = [{"tool": "look", "args": {"what": "notes"}}, {"tool": "remove", "depends_on": [1]}]
    plan = accept_plan(PlanArgs.model_validate({"steps": steps}, context=numbering), numbering)
    assert plan[1] == {"id": 2, "step": "remove(…)", "depends_on": [1, 3], "deferred": "remove"}


def test_a_tool_that_needs_no_arguments_is_called_without_them_not_deferred() -> None:
    tools = OwnTools(Folder().tools)
    plan = accept_plan(PlanArgs(steps=[{"tool": "listing"}]), Numbering.first_plan(tools))
    assert plan == [{"id": 1, "step": "listing()", "depends_on": [], "tool": "listing", "args": {}}]


def test_a_deferred_step_is_declared_shown_for_review_and_read_back_the_same() -> None:
    tools = OwnTools(Folder().tools)
    steps = [{"tool": "listing"}, {"tool": "remove", "depends_on": [1]}]
    plan = accept_plan(PlanArgs(steps=steps), Numbering.first_plan(tools))
    assert declared(plan)["declared_tools"] == ["listing", "remove"]
    items = plan_items(plan)
    assert items[1] == {"tool": "remove", "depends_on": [1]}
    assert accept_plan(PlanArgs(steps=items), Numbering.first_plan(tools)) == plan


def test_a_follow_up_plan_may_defer_a_call_on_the_turn_befores_results() -> None:
    """Turn 2's plan names turn 1's listing (done) in a deferred step beside a look-up: the
    look-up runs first, then the replanner writes the call from the listing."""
    folder = Folder()
    model = FakeChatModel(
        planner=[
            plan_call({"tool": "listing"}),
            plan_call(
                {"tool": "look", "args": {"what": "notes"}}, {"tool": "remove", "depends_on": [1]}
            ),
        ],
        replanner=[
            call("respond", response="Two files."),
            plan_call({"tool": "remove", "args": {"name": "notes.txt"}}),
            call("respond", response="Removed notes.txt."),
        ],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    run(graph, "What is here?", config=CONFIG)
    result = run(graph, "Remove the notes", config=CONFIG)

    assert result["response"] == "Removed notes.txt."
    assert folder.calls == ["listing", "look notes", "remove notes.txt"]
    asked = model.requests_of("replanner")[1].prompt
    assert "3. remove(…)" in asked and "NOTES" in asked


# --- a response that leaves planned calls unmade ------------------------------------------------


@both_modes
def test_a_response_leaving_planned_calls_is_followed_by_one_plan_only_request(
    mode: Mode,
) -> None:
    """`remove` fails and the replanner responds as if all were done: it is asked once more,
    for a plan only, told which call failed and which was not made; that plan runs. After it
    a call acted (`enter`), so the failed `remove` may work now: the next response gets the
    plan-only request too, and stands when its plan makes no call not made before."""
    folder = Folder()
    model = FakeChatModel(
        planner=[plan_call(*REMOVE_THEN_UP)],
        replanner=[
            call("respond", response="All drafts removed."),
            plan_call({"tool": "listing"}, {"tool": "enter", "args": {"folder_name": ".."}}),
            call("respond", response="No file matched drafts/*; back in the parent folder."),
            plan_call({"tool": "enter", "args": {"folder_name": ".."}}),
        ],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    result = run(graph, "Remove drafts/*, then go up", mode, config=CONFIG, context=WHEN_NEEDED)

    assert folder.calls == ["remove drafts/*", "listing", "enter .."]
    assert result["response"].startswith("No file matched")
    (_, plan_only, _, asked_again) = model.requests_of("replanner")
    assert plan_only.tools == ["plan"]
    assert '1. remove(name="drafts/*") failed: {"error": ' in plan_only.prompt
    assert '2. enter(folder_name="..") (not made)' in plan_only.prompt
    assert '1. remove(name="drafts/*") failed: {"error": ' in asked_again.prompt
    assert graph.get_state(CONFIG).values["corrected_mistakes"] == 1


@both_modes
def test_the_response_stands_when_no_plan_comes_or_no_new_call(mode: Mode) -> None:
    """The plan-only request answered with a response again (twice: one correction): the first
    response stands. After a last call that failed, the plan-only request comes too; a plan
    that only makes the failed call again leaves the response standing."""
    folder = Folder()
    model = FakeChatModel(
        planner=[plan_call(*REMOVE_THEN_UP)],
        replanner=[call("respond", response="Nothing to remove.")] * 3,
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    result = run(graph, "Remove drafts/*", mode, config=CONFIG, context=WHEN_NEEDED)
    assert result["response"] == "Nothing to remove." and folder.calls == ["remove drafts/*"]
    assert len(model.requests_of("replanner")) == 3

    last_failed = FakeChatModel(
        planner=[plan_call(REMOVE_THEN_UP[0])],
        replanner=[
            call("respond", response="No file matched drafts/*."),
            plan_call(REMOVE_THEN_UP[0]),
        ],
    )
    graph = build_plan_execute_graph(last_failed, Folder().tools, checkpointer=InMemorySaver())
    result = run(graph, "Remove drafts/*", mode, config=CONFIG, context=WHEN_NEEDED)
    assert result["response"] == "No file matched drafts/*."
    (_, plan_only) = last_failed.requests_of("replanner")
    assert '1. remove(name="drafts/*") failed: {"error": ' in plan_only.prompt
    assert "(not made)" not in plan_only.prompt


@both_modes
def test_a_response_after_the_last_call_failed_gets_one_plan_only_request(mode: Mode) -> None:
    """The only call fails and the replanner responds anyway: asked for a plan only, told
    which call failed and with what, it goes where the file is and makes a call that works."""
    folder = Folder()
    model = FakeChatModel(
        planner=[plan_call(REMOVE_THEN_UP[0])],
        replanner=[
            call("respond", response="Removed the drafts."),
            plan_call(
                {"tool": "enter", "args": {"folder_name": "drafts"}},
                {"tool": "remove", "args": {"name": "plan.md"}},
            ),
            call("respond", response="Removed plan.md."),
        ],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    objective = "Remove drafts/*: plan.md, in the drafts folder"
    result = run(graph, objective, mode, config=CONFIG, context=WHEN_NEEDED)

    assert folder.calls == ["remove drafts/*", "enter drafts", "remove plan.md"]
    assert result["response"] == "Removed plan.md."
    (_, plan_only, _) = model.requests_of("replanner")
    assert plan_only.tools == ["plan"]
    assert '1. remove(name="drafts/*") failed: {"error": ' in plan_only.prompt
    assert "Where a result says what must be done first" in plan_only.prompt


def engine_tools(calls: list[str]) -> list[BaseTool]:
    """`start` fails until `press` was called; both may act."""

    @tool
    def press() -> str:
        """Press the brake pedal."""
        calls.append("press")
        return "pressed"

    @tool
    def start() -> str:
        """Start the engine."""
        calls.append("start")
        if "press" not in calls:
            return json.dumps({"error": "press the brake pedal before starting the engine"})
        return "started"

    return [press, start]


@both_modes
def test_a_call_that_failed_before_what_its_error_asked_for_was_done_is_made_again(
    mode: Mode,
) -> None:
    """`start` fails, the replanner plans what its error asks for first (`press`), then
    responds without starting: asked once more for a plan only, told that `start` failed, it
    lists `start` as it was, which is made again (it may work now) and works."""
    calls: list[str] = []
    model = FakeChatModel(
        planner=[plan_call({"tool": "start"})],
        replanner=[
            plan_call({"tool": "press"}),
            call("respond", response="The pedal is pressed."),
            plan_call({"tool": "start"}),
            call("respond", response="Started."),
        ],
    )
    graph = build_plan_execute_graph(model, engine_tools(calls), checkpointer=InMemorySaver())
    result = run(graph, "Start the engine", mode, config=CONFIG, context=WHEN_NEEDED)

    assert calls == ["start", "press", "start"]
    assert result["response"] == "Started."
    plan_only = model.requests_of("replanner")[2]
    assert plan_only.tools == ["plan"]
    assert '1. start() failed: {"error": ' in plan_only.prompt


@both_modes
def test_a_failed_call_is_not_offered_again_while_nothing_acted_since(mode: Mode) -> None:
    """`start` fails and a look-up follows (nothing acted since): the response after it
    stands, and `start` listed again would only fail the same way."""
    calls: list[str] = []
    tools = [*engine_tools(calls), Folder().tools[1]]  # `listing`: read-only
    model = FakeChatModel(
        planner=[plan_call({"tool": "start"})],
        replanner=[
            plan_call({"tool": "listing"}),
            call("respond", response="The engine did not start."),
        ],
    )
    graph = build_plan_execute_graph(model, tools, checkpointer=InMemorySaver())
    result = run(graph, "Start the engine", mode, config=CONFIG, context=WHEN_NEEDED)

    assert calls == ["start"]
    assert result["response"] == "The engine did not start."
    assert len(model.requests_of("replanner")) == 2


@both_modes
def test_a_replan_re_listing_a_call_that_acted_does_not_make_it_again(mode: Mode) -> None:
    """The replanner re-lists `enter drafts`, made and done, with the call still to make: it is
    not made again, and the step after it waits for (and refers to) the call made before.
    The failed call, re-listed as it was, is made again (it may work now)."""
    folder = Folder()
    model = FakeChatModel(
        planner=[
            plan_call(
                {"tool": "enter", "args": {"folder_name": "drafts"}},
                {"tool": "remove", "args": {"name": "a*"}},
            )
        ],
        replanner=[
            plan_call(
                {"tool": "enter", "args": {"folder_name": "drafts"}},
                {"tool": "remove", "args": {"name": "notes $1"}, "depends_on": [1]},
                {"tool": "remove", "args": {"name": "a*"}},
            ),
            call("respond", response="notes removed; a* matched nothing"),
            plan_call({"tool": "remove", "args": {"name": "a*"}}),  # asked after a* failed
        ],
    )
    graph = build_plan_execute_graph(model, folder.tools, checkpointer=InMemorySaver())
    run(graph, "Clear the drafts", mode, config=CONFIG, context=WHEN_NEEDED)

    assert folder.calls == ["enter drafts", "remove a*", "remove notes ok", "remove a*"]
    replanned = next(v["plan"] for v in states(graph) if v.get("iterations") == 2)
    assert [(step["step"], step["depends_on"]) for step in replanned] == [
        ('remove(name="notes $1")', [1]),
        ('remove(name="a*")', [4]),
    ]
