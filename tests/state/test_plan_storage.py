"""The conformance suite every plan storage backend must pass."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from replan.state.plans import (
    InvalidPlan,
    Plan,
    PlanConflict,
    PlanCorrupt,
    PlanNotFound,
    PlanStorage,
    PlanUpdate,
)
from tests.support.plan_backends import BACKENDS, PERSISTENT_BACKENDS, Backend, corrupt


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PlanStorage]:
    backend = Backend.for_test(request.param, request, tmp_path)
    yield backend.open()
    backend.close()


@pytest.fixture(params=PERSISTENT_BACKENDS)
def persistent_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    backend = Backend.for_test(request.param, request, tmp_path)
    yield backend
    backend.close()


@pytest.fixture
def persistent(persistent_backend: Backend) -> PlanStorage:
    return persistent_backend.open()


def write(storage: PlanStorage, name: str = "release", **fields: object) -> Plan:
    return storage.upsert(PlanUpdate.model_validate({"name": name, **fields}))


def test_backends_satisfy_the_protocol(storage: PlanStorage) -> None:
    assert isinstance(storage, PlanStorage)


def test_missing_plan_reads_as_none_and_lists_empty(storage: PlanStorage) -> None:
    assert storage.get("nothing") is None
    listing = storage.list()
    assert listing.plans == [] and listing.warnings == []


def test_create_then_read_round_trips_every_field(storage: PlanStorage) -> None:
    created = write(
        storage, content="# Steps\n1. ship", title="Ship", author="alice", status="draft"
    )
    assert (created.revision, created.content, created.author) == (1, "# Steps\n1. ship", "alice")
    assert storage.get("release") == created


def test_each_write_bumps_the_revision_and_stamps_the_time(storage: PlanStorage) -> None:
    first = write(storage, content="one")
    second = write(storage, content="two")
    assert (first.revision, second.revision) == (1, 2)
    assert second.updated_at >= first.updated_at
    assert storage.get("release") == second


def test_omitted_fields_keep_their_previous_values(storage: PlanStorage) -> None:
    write(storage, content="body", title="T", author="alice", status="draft")
    updated = write(storage, status="done")
    assert (updated.content, updated.title, updated.author, updated.status) == (
        "body",
        "T",
        "alice",
        "done",
    )
    cleared = write(storage, title="")
    assert cleared.title == "" and cleared.status == "done"


@pytest.mark.parametrize("content", ["", "   \n\t"])
def test_empty_content_is_refused_and_changes_nothing(storage: PlanStorage, content: str) -> None:
    with pytest.raises(InvalidPlan):
        write(storage, content=content)
    assert storage.get("release") is None
    original = write(storage, content="kept")
    with pytest.raises(InvalidPlan):
        write(storage, content=content)
    assert storage.get("release") == original


def test_a_new_plan_needs_content(storage: PlanStorage) -> None:
    with pytest.raises(InvalidPlan, match="needs content"):
        write(storage, status="draft")
    assert storage.list().plans == []


@pytest.mark.parametrize("name", ["a/b", "a b", "A", "-x", "", "x" * 65, "../etc", "café"])
def test_invalid_names_are_refused_everywhere(storage: PlanStorage, name: str) -> None:
    with pytest.raises(InvalidPlan):
        write(storage, name=name, content="x")
    with pytest.raises(InvalidPlan):
        storage.get(name)
    with pytest.raises(InvalidPlan):
        storage.delete(name)
    assert storage.list().plans == []


def test_stale_revision_is_a_conflict_and_changes_nothing(storage: PlanStorage) -> None:
    write(storage, content="v1")
    current = write(storage, content="v2", expected_revision=1)
    with pytest.raises(PlanConflict) as caught:
        write(storage, content="lost", status="x", expected_revision=1)
    assert (caught.value.expected, caught.value.current) == (1, 2)
    assert storage.get("release") == current


def test_revision_zero_means_create_only(storage: PlanStorage) -> None:
    created = write(storage, content="first", expected_revision=0)
    assert created.revision == 1
    with pytest.raises(PlanConflict) as caught:
        write(storage, content="second", expected_revision=0)
    assert caught.value.current == 1
    assert storage.get("release") == created


def test_expecting_a_revision_of_a_missing_plan_conflicts(storage: PlanStorage) -> None:
    with pytest.raises(PlanConflict) as caught:
        write(storage, content="x", expected_revision=3)
    assert caught.value.current == 0
    assert storage.get("release") is None


def test_must_exist_never_creates(storage: PlanStorage) -> None:
    with pytest.raises(PlanNotFound):
        write(storage, status="done", must_exist=True)
    assert storage.get("release") is None
    write(storage, content="body")
    assert write(storage, status="done", must_exist=True).status == "done"


def test_list_is_sorted_and_has_no_bodies(storage: PlanStorage) -> None:
    for name in ("zeta", "alpha", "mid_1"):
        write(storage, name=name, content=f"body of {name}", author=name)
    listing = storage.list()
    assert [plan.name for plan in listing.plans] == ["alpha", "mid_1", "zeta"]
    assert all("content" not in plan.model_dump() for plan in listing.plans)
    assert [plan.author for plan in listing.plans] == ["alpha", "mid_1", "zeta"]


def test_delete_checks_the_revision(storage: PlanStorage) -> None:
    write(storage, content="v1")
    write(storage, content="v2")
    with pytest.raises(PlanConflict):
        storage.delete("release", expected_revision=1)
    assert storage.get("release") is not None
    assert storage.delete("release", expected_revision=2) is True
    assert storage.get("release") is None
    assert storage.delete("release") is False


def test_a_deleted_plan_starts_again_at_revision_one(storage: PlanStorage) -> None:
    write(storage, content="v1")
    write(storage, content="v2")
    storage.delete("release")
    assert write(storage, content="fresh", expected_revision=0).revision == 1


def test_agents_sharing_a_storage_see_who_wrote_last(storage: PlanStorage) -> None:
    write(storage, content="draft", author="planner")
    read = storage.get("release")
    assert read is not None
    write(storage, content="reviewed", author="reviewer", expected_revision=read.revision)
    final = storage.get("release")
    assert final is not None and (final.author, final.revision) == ("reviewer", 2)


def race(count: int, contender: Callable[[int], None]) -> None:
    """Run `contender(i)` for i in range(count) in threads released together."""
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        contender(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("revision", [0, 1], ids=["create", "update"])
def test_same_revision_from_eight_threads_has_exactly_one_winner(
    storage: PlanStorage, revision: int
) -> None:
    if revision:
        write(storage, content="base")
    outcomes: dict[int, str] = {}

    def contender(index: int) -> None:
        try:
            write(storage, content=f"from {index}", author=str(index), expected_revision=revision)
            outcomes[index] = "won"
        except PlanConflict:
            outcomes[index] = "conflict"

    race(8, contender)
    winners = [index for index, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == 8 and len(winners) == 1
    final = storage.get("release")
    assert final is not None
    assert (final.revision, final.author, final.content) == (
        revision + 1,
        str(winners[0]),
        f"from {winners[0]}",
    )


def test_eight_threads_creating_without_a_revision_all_land_in_turn(storage: PlanStorage) -> None:
    written: list[Plan] = []
    race(8, lambda index: written.append(write(storage, content=f"from {index}")))
    assert sorted(plan.revision for plan in written) == list(range(1, 9))
    final = storage.get("release")
    assert final is not None and final == max(written, key=lambda plan: plan.revision)


def test_retrying_writers_never_lose_an_update(storage: PlanStorage) -> None:
    write(storage, name="counter", content="0")
    per_thread, thread_count = 8, 4

    def increment(_: int) -> None:
        for _ in range(per_thread):
            while True:
                plan = storage.get("counter")
                assert plan is not None
                try:
                    write(
                        storage,
                        name="counter",
                        content=str(int(plan.content) + 1),
                        expected_revision=plan.revision,
                    )
                    break
                except PlanConflict:
                    continue

    race(thread_count, increment)
    final = storage.get("counter")
    assert final is not None
    assert (final.content, final.revision) == (
        str(per_thread * thread_count),
        1 + per_thread * thread_count,
    )


def test_plans_survive_reopening(persistent_backend: Backend) -> None:
    written = write(persistent_backend.open(), content="durable", title="Keep")
    assert persistent_backend.open().get("release") == written


def test_a_corrupt_plan_is_reported_as_corrupt_not_missing(persistent: PlanStorage) -> None:
    write(persistent, name="broken", content="soon damaged")
    corrupt(persistent, "broken")
    with pytest.raises(PlanCorrupt) as caught:
        persistent.get("broken")
    assert caught.value.name == "broken"
    with pytest.raises(PlanCorrupt):
        write(persistent, name="broken", content="would clobber")
    with pytest.raises(PlanCorrupt):
        write(persistent, name="broken", content="would clobber", expected_revision=0)


def test_listing_skips_a_corrupt_plan_with_a_warning_naming_it(persistent: PlanStorage) -> None:
    write(persistent, name="good", content="fine")
    write(persistent, name="broken", content="soon damaged")
    corrupt(persistent, "broken")
    listing = persistent.list()
    assert [plan.name for plan in listing.plans] == ["good"]
    assert len(listing.warnings) == 1 and "broken" in listing.warnings[0]


def test_a_corrupt_plan_can_be_deleted_only_without_a_revision(persistent: PlanStorage) -> None:
    write(persistent, name="broken", content="soon damaged")
    corrupt(persistent, "broken")
    with pytest.raises(PlanCorrupt):
        persistent.delete("broken", expected_revision=1)
    assert persistent.delete("broken") is True
    assert persistent.get("broken") is None
    assert write(persistent, name="broken", content="again").revision == 1
