"""TaskTable: an immutable task collection whose versions share structure, checked against a
plain dict under random changes."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from replan.state import Task, TaskTable

IDS = st.integers(1, 400)  # several chunks, often the same slot again
CHANGES = st.lists(
    st.tuples(st.booleans(), IDS, st.sampled_from(["pending", "in_progress", "completed"])),
    max_size=60,
)


def task(number: int, status: str = "pending") -> Task:
    return Task(id=str(number), subject=f"t{number}", status=status)  # type: ignore[arg-type]


def expected(reference: dict[int, Task]) -> list[Task]:
    return [reference[number] for number in sorted(reference)]


@settings(max_examples=200, deadline=None)
@given(start=st.lists(IDS, unique=True, max_size=40), changes=CHANGES)
def test_every_version_matches_a_dict_and_old_versions_never_change(
    start: list[int], changes: list[tuple[bool, int, str]]
) -> None:
    reference = {number: task(number) for number in start}
    table = TaskTable(reference.values())
    versions = [(table, dict(reference))]
    for put, number, status in changes:
        if put:
            reference[number] = task(number, status)
            table = table.with_task(reference[number])
        else:
            reference.pop(number, None)
            table = table.without(str(number))
        versions.append((table, dict(reference)))
    for version, state in versions:  # persistence: each version still holds what it held
        assert list(version) == expected(state) and len(version) == len(state)
        assert version.open_count == sum(t.status != "completed" for t in state.values())
        assert version.highest_id() == max(state, default=0)
        for number in (1, 64, 65, 399, 400):
            assert version.by_id(str(number)) is state.get(number)
    first, last = versions[0], versions[-1]
    written, removed = first[0].changes_to(last[0])
    assert {t.id for t in written} == {
        str(n) for n, t in last[1].items() if first[1].get(n) is not t
    }
    assert set(removed) == {str(n) for n in first[1] if n not in last[1]}


def test_lookups_are_by_canonical_id_and_duplicates_are_refused() -> None:
    seven, seventy = task(7), task(70)
    table = TaskTable([seventy, seven])
    assert table.by_id("7") is seven and table[0] is seven and table.by_id("07") is None
    assert table.by_id("abc") is None and table.by_id("") is None
    assert table[-1] is seventy and list(table[:1]) == [seven]
    assert seven in table and task(8) not in table
    assert seven.model_copy(update={"subject": "other"}) not in table
    assert table == [seven, seventy] and table != [seventy]
    try:
        TaskTable([task(3), task(3)])
    except ValueError as error:
        assert "more than once" in str(error)
    else:
        raise AssertionError("a duplicate ID was accepted")


def test_copies_are_the_table_itself_and_pickling_round_trips() -> None:
    table = TaskTable([task(1), task(2, "completed")])
    assert copy.copy(table) is table and copy.deepcopy(table) is table
    restored = pickle.loads(pickle.dumps(table))
    assert restored == table and restored.open_count == 1
