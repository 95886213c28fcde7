"""Plan names, the shared update rules and the on-disk details of each persistent backend."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from replan.state.fileio import LOCK_FILE
from replan.state.plans import (
    MAX_NAME_LENGTH,
    FilesystemPlanStorage,
    InvalidPlan,
    PlanCorrupt,
    PlanUpdate,
    SqlitePlanStorage,
    default_plans_dir,
    validate_name,
)
from replan.state.plans.storage import apply_update, decode_plan


@pytest.mark.parametrize("name", ["a", "7", "release-2", "q3_review-draft", "x" * MAX_NAME_LENGTH])
def test_valid_names_are_kept_exactly(name: str) -> None:
    assert validate_name(name) == name


def test_names_that_a_slugifier_would_merge_stay_distinct() -> None:
    assert validate_name("a-b") == "a-b"
    for lookalike in ("a/b", "a b", "A-B", "a.b", "a-b\n"):
        with pytest.raises(InvalidPlan):
            validate_name(lookalike)


def test_apply_update_bumps_from_the_current_plan() -> None:
    first = apply_update(None, PlanUpdate(name="p", content="one", author="a", status="draft"))
    second = apply_update(first, PlanUpdate(name="p", author="b"))
    assert (first.revision, second.revision) == (1, 2)
    assert (second.content, second.author, second.status) == ("one", "b", "draft")


@pytest.mark.parametrize("field", ["title", "author", "status"])
def test_labels_must_be_one_short_line(field: str) -> None:
    for bad in ("two\nlines", "x" * 201):
        with pytest.raises(InvalidPlan, match=field):
            apply_update(None, PlanUpdate.model_validate({"name": "p", "content": "c", field: bad}))


def test_decode_refuses_a_file_that_names_another_plan() -> None:
    plan = apply_update(None, PlanUpdate(name="p", content="c"))
    with pytest.raises(PlanCorrupt, match="names itself"):
        decode_plan("q", plan.model_dump_json())


def test_default_folder_follows_the_environment(tmp_path: Path) -> None:
    home_default = Path.home() / ".local" / "share" / "replan" / "plans"
    assert default_plans_dir({}) == home_default
    assert default_plans_dir({"XDG_DATA_HOME": "relative"}) == home_default
    assert default_plans_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "replan" / "plans"
    env = {"XDG_DATA_HOME": str(tmp_path), "REPLAN_PLANS_DIR": str(tmp_path / "mine")}
    assert default_plans_dir(env) == tmp_path / "mine"


def test_filesystem_storage_uses_the_env_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "env-plans"))
    FilesystemPlanStorage().upsert(PlanUpdate(name="p", content="c"))
    assert (tmp_path / "env-plans" / "p.json").is_file()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_filesystem_files_are_private_json_and_leave_no_temp_files(tmp_path: Path) -> None:
    storage = FilesystemPlanStorage(tmp_path / "a" / "plans")
    assert not storage.directory.exists()  # created on the first write
    storage.upsert(PlanUpdate(name="p", content="body", title="T"))
    storage.upsert(PlanUpdate(name="p", content="body 2"))
    assert mode(storage.directory) == 0o700
    assert mode(storage.path_of("p")) == 0o600
    assert sorted(os.listdir(storage.directory)) == [LOCK_FILE, "p.json"]
    on_disk = json.loads(storage.path_of("p").read_text())
    assert (on_disk["name"], on_disk["content"], on_disk["revision"]) == ("p", "body 2", 2)


def test_filesystem_listing_warns_about_unreadable_and_foreign_files(tmp_path: Path) -> None:
    storage = FilesystemPlanStorage(tmp_path)
    storage.upsert(PlanUpdate(name="good", content="fine"))
    (tmp_path / "folder.json").mkdir()  # exists but cannot be read as a file
    (tmp_path / "Bad Name.json").write_text("{}")
    (tmp_path / ".good.json.x1.tmp").write_text("left by a killed writer")
    listing = storage.list()
    assert [plan.name for plan in listing.plans] == ["good"]
    assert len(listing.warnings) == 2
    assert any("'folder'" in warning for warning in listing.warnings)
    assert any("Bad Name.json" in warning for warning in listing.warnings)
    with pytest.raises(PlanCorrupt):
        storage.get("folder")


def test_sqlite_database_is_private(tmp_path: Path) -> None:
    storage = SqlitePlanStorage(tmp_path / "db" / "plans.db")
    storage.upsert(PlanUpdate(name="p", content="c"))
    assert mode(tmp_path / "db") == 0o700
    assert mode(storage.path) == 0o600
    assert all(mode(path) == 0o600 for path in (tmp_path / "db").iterdir())
