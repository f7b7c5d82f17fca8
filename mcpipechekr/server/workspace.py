"""The git repository of the server's source, where Phase 3 commits its fixes.

For a user's own server, `server.repo` is their checkout and is only read here
(its SHA and dirty flag go into each run's manifest). For the bundled example,
`server.repo_template` names a folder that is copied into `server.repo` as a
fresh repository with one initial commit: fixes are then committed there, never
into MCPipeChekr's own repository.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr._util.yamlsrc import Problem, display_path
from mcpipechekr.config import Config, ServerConfig
from mcpipechekr.errors import UserError

# Build leftovers that must not become part of the copied server's first commit.
_TEMPLATE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.db", "*.db-*", ".pytest_cache")
HARNESS_AUTHOR = git.Actor("MCPipeChekr", "mcpipechekr@localhost")


@dataclass(frozen=True)
class RepoState:
    """Which source the server under test runs: recorded in every manifest."""

    sha: str | None
    dirty: bool


TEMPLATE_IMPORT_DATE = "946684800 +0000"
"""The date of the commit that imports `repo_template` (2000-01-01 UTC, in git's own form): fixed, so the
commit is the same for every copy."""


def prepare_repo(server: ServerConfig) -> Path | None:
    """Make sure `server.repo` exists as a git repository; seed it from `repo_template` when missing.

    Returns the repository path, or None when no repository is configured.
    Safe to call on every run: an existing repository is left as it is.
    """
    if server.repo is None:
        return None
    repo_path = Path(server.repo)
    if (repo_path / ".git").exists():
        return repo_path
    if repo_path.exists() and any(repo_path.iterdir()):
        raise UserError(
            f"server.repo {repo_path} exists but is not a git repository. "
            "Point server.repo at the server's git checkout, or remove the folder so it can be created."
        )
    if server.repo_template is None:
        raise UserError(
            f"server.repo {repo_path} does not exist. Clone the server's source there, "
            "or set server.repo_template to a folder to copy it from."
        )
    template = Path(server.repo_template)
    if not template.is_dir():
        raise UserError(f"server.repo_template {template} is not a folder.")
    staging = repo_path.with_name(f".{repo_path.name}.preparing")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(template, staging, ignore=_TEMPLATE_IGNORE)
    repo = git.Repo.init(staging, initial_branch="main")
    with repo.config_writer() as cfg:  # commits made here must not depend on the user's global git identity
        cfg.set_value("user", "name", HARNESS_AUTHOR.name)
        cfg.set_value("user", "email", HARNESS_AUTHOR.email)
    repo.git.add(A=True)
    # A fixed date: the same template always makes the same first commit, and that commit names the
    # server's source for its findings (`findings/server_identity.py`), so a repository made again
    # from the template (another copy of the project, or one removed to start over) is the same server.
    repo.index.commit(
        f"Initial import of {template.name}",
        author=HARNESS_AUTHOR,
        committer=HARNESS_AUTHOR,
        author_date=TEMPLATE_IMPORT_DATE,
        commit_date=TEMPLATE_IMPORT_DATE,
    )
    repo.close()
    repo_path.parent.mkdir(parents=True, exist_ok=True)
    if repo_path.exists():
        repo_path.rmdir()  # an empty folder left by an earlier attempt
    staging.rename(repo_path)  # the repository appears whole or not at all
    return repo_path


def repo_state(server: ServerConfig) -> RepoState:
    """HEAD's SHA and whether the work tree has uncommitted changes (untracked files count)."""
    if server.repo is None or not (Path(server.repo) / ".git").exists():
        return RepoState(sha=None, dirty=False)
    repo = git.Repo(server.repo)
    try:
        sha = repo.head.commit.hexsha if repo.head.is_valid() else None
        return RepoState(sha=sha, dirty=repo.is_dirty(untracked_files=True))
    finally:
        repo.close()


FIX_END_MARK = "mcpipechekr-fix-end.json"
"""In the repository's git folder: HEAD and the uncommitted paths when the last fix step ended."""


def _changed_paths(repo: git.Repo) -> dict[str, str]:
    """Every tracked path with uncommitted changes (modified, staged, deleted), with a digest of its
    bytes. Untracked files are left out: a server may write its own (a log, a cache) when lint or
    the baseline start it before the trace, and that is no change to its code."""
    root = Path(repo.working_tree_dir or ".")
    names = {item.a_path for item in repo.index.diff(None)}
    if repo.head.is_valid():
        names |= {item.a_path for item in repo.index.diff("HEAD")}
    out = {}
    for name in sorted(names):
        path = root / name
        out[name] = sha256_bytes(path.read_bytes()) if path.is_file() else "absent"
    return out


def mark_fix_end(repo: git.Repo) -> None:
    """Record HEAD and the tree's uncommitted paths as the fix step leaves them (after any undo)."""
    import orjson

    head = repo.head.commit.hexsha if repo.head.is_valid() else None
    mark = Path(repo.git_dir) / FIX_END_MARK
    mark.write_bytes(orjson.dumps({"head": head, "paths": _changed_paths(repo)}))


def refuse_changes_after_fix(server: ServerConfig) -> None:
    """Refuse to trace a server whose repository changed after the last fix step ended, with no commit.

    Nothing of the harness edits the repository between a fix step and the next trace, so a change
    there is something else's: a process the fix agent left, an undo cut short. Tracing it would
    measure code nobody reviewed. A commit since (HEAD moved) ends the check: that tree is chosen.
    """
    if server.repo is None or not (Path(server.repo) / ".git").exists():
        return
    import orjson

    repo = git.Repo(server.repo)
    try:
        mark = Path(repo.git_dir) / FIX_END_MARK
        if not mark.is_file():
            return
        try:
            recorded = orjson.loads(mark.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        head = repo.head.commit.hexsha if repo.head.is_valid() else None
        if recorded.get("head") != head:
            mark.unlink(missing_ok=True)
            return
        before = recorded.get("paths") or {}
        changed = sorted(name for name, digest in _changed_paths(repo).items() if before.get(name) != digest)
        changed += sorted(name for name in before if name not in _changed_paths(repo))
    finally:
        repo.close()
    if changed:
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        where = display_path(Path(server.repo))
        raise UserError(
            f"server.repo {where} changed after the last fix step ended, with no commit: {shown}. "
            "No fix commit made these changes, so tracing them would measure code nobody reviewed. "
            f'See them with `git -C {where} status`; keep them with `git -C {where} commit -am "…"`, '
            f"or drop them with `git -C {where} checkout -- .` (and `git -C {where} clean -fd` for new "
            "files); then run the same command again."
        )


def fix_repo_problems(config: Config) -> list[Problem]:
    """Why the fix step could not commit anything: no `server.repo`, or one that is no git repository.

    A repository that does not exist yet is fine when `repo_template` will
    create it. Checked by preflight and by an approval (`review.require_fixable`),
    which is why it lives here with the repository it is about.
    """
    server = config.server
    if server.repo is None:
        also = (
            " (server.repo_template is copied into server.repo, so it needs one too)"
            if server.repo_template
            else ""
        )
        return [
            config.problem(
                ("server", "repo"),
                "is not set, and the `fix` step commits each fix in the server's git repository"
                f"{also}: set server.repo in config.yaml to the server's checkout (relative to "
                "config.yaml's folder)",
            )
        ]
    repo = Path(server.repo)
    if (repo / ".git").exists():
        return []
    if server.repo_template is not None:
        if repo.exists() and any(repo.iterdir()):
            return [
                config.problem(
                    ("server", "repo"),
                    f"{display_path(repo)} exists but is not a git repository, so server.repo_template "
                    "cannot be copied there: remove the folder, or point server.repo at the server's "
                    "checkout",
                )
            ]
        if not Path(server.repo_template).is_dir():
            return [
                config.problem(
                    ("server", "repo_template"),
                    f"{display_path(server.repo_template)} is not a folder, so server.repo cannot be "
                    "created for the `fix` step: point it at the server's source",
                )
            ]
        return []
    return [
        config.problem(
            ("server", "repo"),
            f"{display_path(repo)} is not a git repository, and the `fix` step commits each fix there: "
            "point server.repo at the server's checkout, or set server.repo_template to a folder to copy "
            "it from",
        )
    ]


def server_source_digest(config: Config) -> str | None:
    """HEAD plus the bytes of uncommitted changes, so editing a dirty tree changes the identity too.

    None when the server has no repository configured: its changes cannot be
    seen, and runs are told apart only by the other inputs (or `--new-run`).
    """
    repo_path = config.server.repo
    if repo_path is None or not (Path(repo_path) / ".git").exists():
        return None
    repo = git.Repo(repo_path)
    try:
        head = repo.head.commit.hexsha if repo.head.is_valid() else "no-commit"
        if not repo.is_dirty(untracked_files=True):
            return head
        diff = repo.git.diff("HEAD", binary=True).encode()
        untracked = b"".join(
            name.encode() + b"\0" + _read(Path(repo_path) / name) for name in sorted(repo.untracked_files)
        )
        changes = sha256_bytes(diff + b"\0" + untracked)
        return f"{head}+{changes}"
    except git.GitCommandError as exc:  # git refreshes its index here: a full disk or read-only tree stops it
        why = (exc.stderr or "").strip().removeprefix("stderr:").strip(" '\n") or f"exit status {exc.status}"
        raise UserError(
            f"cannot read the state of the server's repository {repo_path}: git failed ({why}); "
            "is the disk full, or the folder read-only?"
        ) from None
    finally:
        repo.close()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
