"""What the fix agent changed in the server's repository, and committing or undoing exactly that.

The rule: a fix commit holds the files the agent changed and nothing else, and
an unresolved bug leaves the repository as it was. To make "what the agent
changed" exact:

- the loop refuses to start while tracked files have uncommitted changes (they
  would be indistinguishable from the agent's work);
- untracked files that exist before a bug is worked on are fingerprinted, so
  only ones the agent created or rewrote count;
- if the agent commits by itself, its commits are folded back (a soft reset to
  where the bug started), so each bug still ends as one `fix: <bug id>` commit
  made here;
- ignored files never count (git status does not list them), nor do paths
  matching the exclusions (the run folder, the harness's home, agent scratch
  files, `fix.exclude`).

Untracked files that existed before and that the agent rewrote cannot be
restored (there is no copy of them); they are reported instead.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

import git

from mcpipechekr._util.hashing import sha256_file
from mcpipechekr.artifacts.atomic import atomic_write_bytes
from mcpipechekr.errors import UserError
from mcpipechekr.server.workspace import HARNESS_AUTHOR


def open_repo(path: str | None) -> git.Repo:
    """The server's repository (`server.repo`), or a UserError saying how to configure it."""
    if path is None:
        raise UserError(
            "server.repo is not set: the fix loop commits each fix in the server's git repository. "
            "Set server.repo in config.yaml to the server's checkout."
        )
    try:
        return git.Repo(path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise UserError(
            f"server.repo {path} is not a git repository; point it at the server's checkout."
        ) from None


def head_sha(repo: git.Repo) -> str:
    if not repo.head.is_valid():
        raise UserError(
            f"{repo.working_dir}: the repository has no commit yet; commit the server's source first."
        )
    return repo.head.commit.hexsha


def _status(repo: git.Repo) -> list[tuple[str, str]]:
    """(XY code, path) for every changed or untracked file, renames giving both paths."""
    raw = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all")
    fields = raw.split("\0")
    entries: list[tuple[str, str]] = []
    index = 0
    while index < len(fields):
        field = fields[index]
        index += 1
        if len(field) < 4:
            continue
        code, path = field[:2], field[3:]
        entries.append((code, path))
        if code[0] in "RC" and index < len(fields):  # the next field is the source path
            entries.append((code, fields[index]))
            index += 1
    return entries


def require_clean(repo: git.Repo) -> None:
    """Refuse a repository whose tracked files have uncommitted changes: they would mix with the fix."""
    dirty = sorted({path for code, path in _status(repo) if code != "??"})
    if dirty:
        shown = ", ".join(dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        raise UserError(
            f"{repo.working_dir} has uncommitted changes to tracked files ({shown}). The fix loop commits "
            "only what the agent changes, so commit or stash these first."
        )


@dataclass(frozen=True)
class Exclusions:
    """Paths never counted as the agent's changes: glob patterns and folders, repository-relative."""

    patterns: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()

    @classmethod
    def build(cls, repo_root: Path, patterns: list[str] | tuple[str, ...], folders: list[Path]) -> Exclusions:
        """Keep the folders that lie inside the repository (e.g. runs/ when the harness runs from it)."""
        root = repo_root.resolve()
        inside = []
        for folder in folders:
            try:
                inside.append(Path(folder).resolve().relative_to(root).as_posix())
            except ValueError:
                continue
        return cls(tuple(patterns), tuple(path for path in inside if path not in ("", ".")))

    def excludes(self, path: str) -> bool:
        if any(path == folder or path.startswith(folder + "/") for folder in self.folders):
            return True
        name = path.rsplit("/", 1)[-1]
        return any(
            fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(name, pattern) for pattern in self.patterns
        )


def _fingerprint(root: Path, path: str) -> str | None:
    try:
        return sha256_file(root / path)
    except (FileNotFoundError, IsADirectoryError):
        return None


@dataclass
class Baseline:
    """The repository just before the agent works on one bug."""

    commit: str
    untracked: dict[str, str | None]


def snapshot(repo: git.Repo) -> Baseline:
    """HEAD and a fingerprint of every untracked (not ignored) file."""
    root = Path(repo.working_dir)
    untracked = {path: _fingerprint(root, path) for code, path in _status(repo) if code == "??"}
    return Baseline(commit=head_sha(repo), untracked=untracked)


def fold_agent_commits(repo: git.Repo, baseline: Baseline) -> int:
    """Undo commits the agent made itself, keeping their changes staged; returns how many there were."""
    if head_sha(repo) == baseline.commit:
        return 0
    count = int(repo.git.rev_list("--count", f"{baseline.commit}..HEAD") or 0)
    repo.git.reset("--soft", baseline.commit)
    return count


@dataclass
class Changes:
    """What the agent changed since the baseline."""

    paths: list[str]
    """Every path a commit can hold: tracked files added, modified or deleted, new untracked files."""
    rewritten_untracked: list[str]
    """Untracked before the bug and rewritten or deleted by the agent: git has no copy to restore."""


def changed_files(repo: git.Repo, baseline: Baseline, exclusions: Exclusions) -> Changes:
    """The files the agent added, modified or deleted since `baseline`, minus the exclusions."""
    root = Path(repo.working_dir)
    paths: set[str] = set()
    rewritten: set[str] = set()
    for code, path in _status(repo):
        if exclusions.excludes(path):
            continue
        if code != "??":
            paths.add(path)
        elif path not in baseline.untracked:
            paths.add(path)
        elif _fingerprint(root, path) != baseline.untracked[path]:
            paths.add(path)
            rewritten.add(path)
    for path, fingerprint in baseline.untracked.items():  # deleted by the agent: reported, not committable
        if fingerprint is not None and not (root / path).exists() and not exclusions.excludes(path):
            rewritten.add(path)
    return Changes(paths=sorted(paths), rewritten_untracked=sorted(rewritten))


def _author(repo: git.Repo) -> git.Actor:
    """The repository's configured identity; the harness's own when it has none."""
    reader = repo.config_reader()
    name = reader.get_value("user", "name", default="") or os.environ.get("GIT_AUTHOR_NAME", "")
    email = reader.get_value("user", "email", default="") or os.environ.get("GIT_AUTHOR_EMAIL", "")
    if name and email:
        return git.Actor(str(name), str(email))
    return HARNESS_AUTHOR


def commit_paths(repo: git.Repo, paths: list[str], message: str) -> str:
    """Stage exactly `paths` (additions, edits, deletions) and commit them; returns the new SHA.

    Anything else the agent staged is unstaged first, so the commit holds these paths only.
    """
    repo.git.reset("-q", "HEAD")
    root = Path(repo.working_dir)
    stageable = [path for path in paths if (root / path).exists() or _tracked(repo, path)]
    if not stageable:  # `git add -A --` with no path would stage everything
        raise ValueError("nothing to commit among the changed paths")
    repo.git.add("-A", "--", *stageable)
    author = _author(repo)
    commit = repo.index.commit(message, author=author, committer=author)
    return commit.hexsha


def _tracked(repo: git.Repo, path: str) -> bool:
    return bool(repo.git.ls_files("--", path))


def restore(repo: git.Repo, baseline: Baseline, changes: Changes) -> None:
    """Put back every changed file that git has a copy of; delete the files the agent created."""
    root = Path(repo.working_dir)
    restorable = [path for path in changes.paths if path not in changes.rewritten_untracked]
    if not restorable:
        return
    repo.git.reset("-q", baseline.commit, "--", *restorable)  # the index as it was, for these paths
    in_commit = set(repo.git.ls_tree("-r", "--name-only", baseline.commit, "--", *restorable).splitlines())
    if in_commit:
        repo.git.checkout(baseline.commit, "--", *sorted(in_commit))
    for path in restorable:
        if path not in in_commit:
            target = root / path
            if target.is_file() or target.is_symlink():
                target.unlink()
            _remove_empty_parents(target.parent, root)


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def is_ancestor(repo: git.Repo, commit: str, of: str = "HEAD") -> bool:
    """Whether `commit` is `of` or one of its ancestors (a commit that is gone counts as not)."""
    try:
        repo.git.merge_base("--is-ancestor", commit, of)
    except git.GitCommandError:
        return False
    return True


def save_patch(repo: git.Repo, baseline: Baseline, changes: Changes, path: Path) -> Path | None:
    """The restorable changes as a binary git patch at `path`, files the agent created included.

    For changes about to be undone (an interrupted fix): `git apply` of the
    patch in the repository at `baseline.commit` brings them back. The paths
    are staged to be diffed (a new file is in no diff otherwise); `restore`
    unstages them. Returns None, writing nothing, when there is nothing to save.
    """
    restorable = [item for item in changes.paths if item not in changes.rewritten_untracked]
    if not restorable:
        return None
    repo.git.add("-A", "--", *restorable)
    patch = repo.git.diff(
        "--cached",
        "--binary",
        baseline.commit,
        "--",
        *restorable,
        stdout_as_string=False,
        strip_newline_in_stdout=False,
    )
    if not patch:
        return None
    return atomic_write_bytes(path, patch)
