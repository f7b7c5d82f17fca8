"""Preparing the server's git repository from a template, and reading its state for manifests."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError
from mcpipechekr.server.workspace import prepare_repo, repo_state


def make_template(root: Path) -> Path:
    template = root / "template"
    (template / "__pycache__").mkdir(parents=True)
    (template / "server.py").write_text("print('hi')\n")
    (template / "__pycache__" / "server.cpython-311.pyc").write_bytes(b"\0")
    (template / "archive.db").write_bytes(b"SQLite")
    return template


def config(repo: Path, template: Path | None) -> ServerConfig:
    return ServerConfig(
        command="python",
        args=["server.py"],
        repo=str(repo),
        repo_template=str(template) if template else None,
    )


def test_repo_is_seeded_once_from_the_template(tmp_path: Path) -> None:
    template = make_template(tmp_path)
    repo_path = tmp_path / "ws" / "emailindex"
    assert prepare_repo(config(repo_path, template)) == repo_path
    repo = git.Repo(repo_path)
    assert [c.message for c in repo.iter_commits()] == ["Initial import of template"]
    assert sorted(repo.git.ls_files().split()) == ["server.py"]  # build leftovers are not committed
    state = repo_state(config(repo_path, template))
    assert state.sha == repo.head.commit.hexsha and not state.dirty

    # a second call leaves the existing repository (and its later commits) alone
    (repo_path / "server.py").write_text("print('fixed')\n")
    repo.index.add(["server.py"])
    repo.index.commit("fix: BUG-1")
    prepare_repo(config(repo_path, template))
    assert git.Repo(repo_path).head.commit.message == "fix: BUG-1"
    assert not (tmp_path / "ws" / ".emailindex.preparing").exists()


def test_dirty_flag_sees_uncommitted_and_untracked_files(tmp_path: Path) -> None:
    repo_path = tmp_path / "repo"
    prepare_repo(config(repo_path, make_template(tmp_path)))
    (repo_path / "notes.txt").write_text("scratch")
    assert repo_state(config(repo_path, None)).dirty


def test_refuses_a_folder_that_is_not_a_repository(tmp_path: Path) -> None:
    repo_path = tmp_path / "existing"
    repo_path.mkdir()
    (repo_path / "file").write_text("x")
    with pytest.raises(UserError, match="exists but is not a git repository"):
        prepare_repo(config(repo_path, make_template(tmp_path)))


def test_missing_repo_without_template_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="set server.repo_template"):
        prepare_repo(config(tmp_path / "absent", None))
    assert repo_state(config(tmp_path / "absent", None)).sha is None
