"""What a fix agent may not do to the server's repository besides editing its files, and the undoing of it.

The agent is untrusted: it runs with the user's rights, in the repository,
steered by a model that read tool descriptions and traces written by the
server under test. The work tree is its job; these are not:

- **git's control files.** `.git/config`, `.git/config.worktree`, `.git/hooks/`
  and `.git/info/` decide what code git runs (hooks, `core.hooksPath`,
  `core.fsmonitor`, filter drivers in `info/attributes`, aliases) and what it
  hides (`info/exclude`). The loop itself runs git in the repository and
  commits there (GitPython runs the commit hooks), so a planted hook would run
  as the harness, and a planted exclude would keep a file out of the fix
  commit. `GitControl` copies them before the agent starts and, after each
  run, puts back every one the agent created, changed or deleted, naming each
  in fix.json. Commits the agent makes itself are folded back by
  `changes.fold_agent_commits`.
- **the network through git.** `AGENT_GIT_ENV` is added to the agent's
  environment: `GIT_ALLOW_PROTOCOL` naming no protocol makes every git transport
  (ssh, https, file paths) refuse, so neither `git push` nor a push under
  another spelling reaches a remote; a remote-tracking ref that moves anyway
  (an agent that cleared its environment) is reported, since a push cannot be
  undone from here.
- **files outside the repository.** The loop cannot see them; the agent CLIs
  can refuse them: the opencode template's config denies `external_directory`
  (and `git push`), and Claude Code in print mode refuses writes outside its
  working directory and to git's files without being told. docs/fix.md says
  what each agent is confined by.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import git

AGENT_GIT_ENV = {"GIT_ALLOW_PROTOCOL": "none-allowed-during-fix", "GIT_TERMINAL_PROMPT": "0"}
"""Added to a fix agent's environment: git refuses every transport, and never asks for a password."""

GUARDED = ("config", "config.worktree", "hooks", "info")
"""Paths under git's common directory whose every file is restored after an agent run."""

_MAX_GUARDED_BYTES = 16 * 1024 * 1024
"""Copies kept in memory; a larger guarded tree (not a real repository's) is refused, not half-guarded."""


@dataclass(frozen=True)
class _Copy:
    """A guarded file's bytes and mode, or the target of a guarded symlink (hook managers link hooks)."""

    data: bytes
    mode: int
    link: str | None = None

    @classmethod
    def of(cls, path: Path) -> _Copy:
        if path.is_symlink():
            return cls(b"", 0, os.readlink(path))
        return cls(path.read_bytes(), path.stat().st_mode & 0o7777)


@dataclass
class GitControl:
    """git's control files and remote-tracking refs as they were before the agent ran."""

    root: Path
    files: dict[str, _Copy]
    remote_refs: dict[str, str]

    @classmethod
    def snapshot(cls, repo: git.Repo) -> GitControl:
        root = Path(repo.common_dir).resolve()
        files: dict[str, _Copy] = {}
        total = 0
        for relative in _guarded_files(root):
            copy = _Copy.of(root / relative)
            total += len(copy.data)
            if total > _MAX_GUARDED_BYTES:
                raise RuntimeError(
                    f"{root}: git's hooks, info and config hold over 16 MiB; not a repository the fix loop "
                    "can guard"
                )
            files[relative] = copy
        return cls(root=root, files=files, remote_refs=_remote_refs(repo))

    def restore(self, repo: git.Repo) -> list[str]:
        """Put every guarded file back; one line per thing the agent did, empty when it did nothing."""
        done: list[str] = []
        now = set(_guarded_files(self.root))
        for relative in sorted(now - self.files.keys()):
            (self.root / relative).unlink()
            done.append(f".git/{relative}: created by the agent; removed")
        for relative, copy in sorted(self.files.items()):
            path = self.root / relative
            if relative not in now:
                what = "deleted"
            elif _Copy.of(path) != copy:
                what = "changed"
                path.unlink()
            else:
                continue
            try:
                _write(path, copy)
            except OSError as exc:
                done.append(f".git/{relative}: {what} by the agent; could not be put back: {exc}")
            else:
                done.append(f".git/{relative}: {what} by the agent; put back")
        moved = _remote_refs(repo)
        for ref in sorted(set(moved) | set(self.remote_refs)):
            if moved.get(ref) != self.remote_refs.get(ref):
                done.append(
                    f"{ref}: moved during the agent's run (a push or fetch got through although git's "
                    "transports were disabled for it); check the remote"
                )
        self.remote_refs = moved
        return done


def _guarded_files(root: Path) -> list[str]:
    """Every file (or symlink) under the guarded paths, relative to git's common directory."""
    found: list[str] = []
    for name in GUARDED:
        top = root / name
        if top.is_symlink() or top.is_file():
            found.append(name)
        elif top.is_dir():
            for folder, dirs, files in os.walk(top, followlinks=False):
                base = Path(folder)
                # a symlinked folder counts as one entry: removed or restored, never walked into
                linked = [entry for entry in dirs if (base / entry).is_symlink()]
                found += [(base / entry).relative_to(root).as_posix() for entry in [*files, *linked]]
    return sorted(found)


def _write(path: Path, copy: _Copy) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if copy.link is not None:
        os.symlink(copy.link, path)
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, copy.mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(copy.data)
    os.chmod(path, copy.mode)


def _remote_refs(repo: git.Repo) -> dict[str, str]:
    listing = repo.git.for_each_ref("refs/remotes", format="%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in listing.splitlines() if " " in line)
