"""Workspace confinement for plan import/export: nothing outside the root, nothing that blocks."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from replan.state.plans import MAX_CONTENT_BYTES, Workspace, WorkspaceError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    return folder


@pytest.fixture
def workspace(root: Path) -> Workspace:
    return Workspace(root)


def test_reads_and_writes_relative_paths_inside(workspace: Workspace, root: Path) -> None:
    target = workspace.write_text("docs/deep/plan.md", "# Plan\n")
    assert target == root / "docs" / "deep" / "plan.md"
    assert workspace.read_text("docs/deep/plan.md") == "# Plan\n"
    assert workspace.read_text(str(target)) == "# Plan\n"  # absolute but inside


@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "docs/../../secret.txt", "/etc/hostname", "", "a\0b", ".", "a\ud800.md"],
)
def test_paths_outside_or_malformed_are_refused(workspace: Workspace, path: str) -> None:
    with pytest.raises(WorkspaceError):
        workspace.read_text(path)
    with pytest.raises(WorkspaceError):
        workspace.write_text(path, "x", overwrite=True)


def test_a_hard_link_to_an_outside_file_is_not_imported(workspace: Workspace, root: Path) -> None:
    os.link(root.parent / "secret.txt", root / "linked.md")
    with pytest.raises(WorkspaceError, match="hard links"):
        workspace.read_text("linked.md")
    workspace.write_text("linked.md", "mine", overwrite=True)  # replaces, never writes through
    assert (root.parent / "secret.txt").read_text() == "outside"
    assert workspace.read_text("linked.md") == "mine"


def test_an_escape_is_refused_before_touching_the_disk(workspace: Workspace, root: Path) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        workspace.write_text("../new-dir/file.md", "x")
    assert not (root.parent / "new-dir").exists()
    assert (root.parent / "secret.txt").read_text() == "outside"


def test_symlinks_pointing_outside_are_refused(workspace: Workspace, root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    (root / "linkdir").symlink_to(root.parent)
    for path in ("link.txt", "linkdir/secret.txt"):
        with pytest.raises(WorkspaceError, match="outside"):
            workspace.read_text(path)
        with pytest.raises(WorkspaceError, match="outside"):
            workspace.write_text(path, "overwritten", overwrite=True)
    with pytest.raises(WorkspaceError):
        workspace.write_text("linkdir/new.md", "x")
    assert (root.parent / "secret.txt").read_text() == "outside"
    assert not (root.parent / "new.md").exists()


def test_symlinks_inside_the_workspace_are_followed(workspace: Workspace, root: Path) -> None:
    (root / "real.md").write_text("real")
    (root / "alias.md").symlink_to(root / "real.md")
    assert workspace.read_text("alias.md") == "real"


def test_a_fifo_is_refused_without_blocking(workspace: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    errors: list[Exception] = []

    def attempt() -> None:
        for call in (
            lambda: workspace.read_text("pipe"),
            lambda: workspace.write_text("pipe", "x", overwrite=True),
        ):
            try:
                call()
            except WorkspaceError as exc:
                errors.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert len(errors) == 2 and all("not a regular file" in str(exc) for exc in errors)
    assert stat.S_ISFIFO(os.stat(root / "pipe").st_mode)


def test_directories_are_refused(workspace: Workspace, root: Path) -> None:
    (root / "folder").mkdir()
    with pytest.raises(WorkspaceError, match="not a regular file"):
        workspace.read_text("folder")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        workspace.write_text("folder", "x", overwrite=True)


def test_a_device_reached_through_a_symlink_is_refused(workspace: Workspace, root: Path) -> None:
    (root / "zero").symlink_to("/dev/zero")
    with pytest.raises(WorkspaceError):
        workspace.read_text("zero")


def test_files_over_the_limit_are_refused(workspace: Workspace, root: Path) -> None:
    with open(root / "big.md", "wb") as handle:
        handle.truncate(MAX_CONTENT_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(WorkspaceError, match="larger than 10 MiB"):
        workspace.read_text("big.md")
    (root / "edge.md").write_bytes(b"a" * MAX_CONTENT_BYTES)
    assert len(workspace.read_text("edge.md")) == MAX_CONTENT_BYTES


def test_binary_files_are_refused(workspace: Workspace, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(WorkspaceError, match="UTF-8"):
        workspace.read_text("blob.bin")


def test_missing_files_are_reported(workspace: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="no file"):
        workspace.read_text("nope.md")


def test_existing_files_are_kept_unless_overwrite(workspace: Workspace, root: Path) -> None:
    (root / "plan.md").write_text("mine")
    os.chmod(root / "plan.md", 0o644)
    with pytest.raises(WorkspaceError, match="overwrite"):
        workspace.write_text("plan.md", "theirs")
    assert (root / "plan.md").read_text() == "mine"
    workspace.write_text("plan.md", "theirs", overwrite=True)
    assert (root / "plan.md").read_text() == "theirs"
    assert stat.S_IMODE(os.stat(root / "plan.md").st_mode) == 0o644


def test_new_files_are_private_and_no_temp_files_remain(workspace: Workspace, root: Path) -> None:
    workspace.write_text("out/new.md", "text")
    assert stat.S_IMODE(os.stat(root / "out" / "new.md").st_mode) == 0o600
    assert os.listdir(root / "out") == ["new.md"]


def test_default_root_is_the_working_directory_at_creation(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(root)
    workspace = Workspace()
    monkeypatch.chdir(tmp_path)
    assert workspace.root == root.resolve()
    workspace.write_text("here.md", "x")
    assert (root / "here.md").exists() and not (tmp_path / "here.md").exists()


def test_a_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "missing")
