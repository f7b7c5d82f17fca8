"""Published MCP servers nobody here wrote, pinned, installed once, each with state to check against.

`check` is judged on servers written here and on the bundled example; this
module gives it servers from the registries instead: three from PyPI
(mcp-server-git, mcp-server-time, mcp-server-fetch) and three from npm
(@modelcontextprotocol/server-filesystem, -memory, -everything), at exact
versions. bench/check_real_servers.py measures `check` on them and
tests/test_check_real_servers.py proves that a check leaves their state as it
found it; both use `install` and `SERVERS` from here, and .ci/run installs
them once (`python bench/real_servers.py install`).

Where they go: `.cache/real-servers/` (or `$MCPIPECHEKR_REAL_SERVERS`). Each
PyPI server gets a virtual environment of its own, because they depend on
mcp 1.x and ours has mcp 2.x; the npm servers share one `npm install --prefix`.
A server is installed again only when its pinned version changed (each folder
keeps a stamp naming what it holds), under a file lock, so concurrent test
runs do not install over each other.

Each server is seeded in a temporary folder that is also its working
directory: a git repository with commits, branches, a tag and uncommitted
changes for git; a small tree (text, CSV, a PNG) for filesystem; a JSONL graph
for memory. `snapshot` describes the state a check must not change: every
file's bytes and mtime under the folder, and for git its refs, HEAD, status,
index entries and reflogs (read with `--no-optional-locks`, so reading does
not refresh the index). The fetch server is given a proxy on a closed
127.0.0.1 port, so it never reaches the internet, wherever it runs.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcpipechekr.config import Config, ServerConfig

REPO = Path(__file__).resolve().parents[1]
CACHE_ENV = "MCPIPECHEKR_REAL_SERVERS"
NPM_FOLDER = "npm"
NPM_MORE = "npm-unannotated"
STAMP = ".installed"
INSTALL_TIMEOUT_S = 600

Snapshot = dict[str, object]


@dataclass(frozen=True)
class Seeded:
    """A server's state in its folder, and how to start it on that state."""

    folder: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    git_repo: Path | None = None
    """A git repository whose refs, HEAD, status, index and reflogs are part of the state."""


@dataclass(frozen=True)
class RealServer:
    """One published server: where it comes from, at which version, and how to seed its state."""

    key: str
    registry: Literal["pypi", "npm"]
    package: str
    version: str
    executable: str
    seed: Callable[[Path], Seeded]
    extra: tuple[str, ...] = ()
    """More PyPI requirements of its venv (`mcp<2` for a server written for the 1.x SDK)."""
    read_only: tuple[str, ...] = ()
    """For a server that annotates none of its tools: those its author would trust as read-only."""

    @property
    def pin(self) -> str:
        pin = (
            f"{self.package}=={self.version}" if self.registry == "pypi" else f"{self.package}@{self.version}"
        )
        return " ".join([pin, *self.extra])

    def folder(self, cache: Path) -> Path:
        return cache / (
            self.key if self.registry == "pypi" else (NPM_FOLDER if self in SERVERS else NPM_MORE)
        )

    def command(self, cache: Path) -> Path:
        if self.registry == "pypi":
            return self.folder(cache) / "bin" / self.executable
        return self.folder(cache) / "node_modules" / ".bin" / self.executable

    def config(self, cache: Path, seeded: Seeded, **check: object) -> Config:
        """A Config as `--command` would build it, started in the seeded folder."""
        server = ServerConfig(
            name=self.key,
            command=str(self.command(cache)),
            args=seeded.args,
            env=seeded.env,
            cwd=str(seeded.folder),
        )
        return Config.model_validate({"server": server.model_dump(), "check": check})


# --- seeds ------------------------------------------------------------------------------------------

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Example",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Example",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
}
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    """Run git in `repo` with a fixed identity (and date), never refreshing the index as a side effect."""
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    if date is not None:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    done = subprocess.run(
        ["git", "--no-optional-locks", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def seed_git(folder: Path) -> Seeded:
    """A repository with three commits on main, a feature branch, a tag, and staged, unstaged and
    untracked changes, so every read-only git tool has something to show."""
    repo = folder / "repo"
    repo.mkdir()
    _git(repo, "init", "--quiet", "--initial-branch=main")
    _write(repo, {"README.md": "# Orchard\n\nCounts apples.\n", "src/orchard.py": "TREES = 3\n"})
    _git(repo, "add", ".")
    _git(repo, "commit", "--quiet", "-m", "Start the orchard", date="2024-03-01T10:00:00Z")
    _write(repo, {"src/orchard.py": "TREES = 3\nAPPLES_PER_TREE = 40\n"})
    _git(repo, "commit", "--quiet", "-am", "Count apples per tree", date="2024-03-02T10:00:00Z")
    _git(repo, "tag", "v0.1")
    _git(repo, "checkout", "--quiet", "-b", "feature/pears")
    _write(repo, {"src/pears.py": "PEARS = 12\n"})
    _git(repo, "add", ".")
    _git(repo, "commit", "--quiet", "-m", "Add pears", date="2024-03-03T10:00:00Z")
    _git(repo, "checkout", "--quiet", "main")
    _write(repo, {"CHANGES.md": "- apples\n"})
    _git(repo, "add", "CHANGES.md")
    _git(repo, "commit", "--quiet", "-m", "Note the changes", date="2024-03-04T10:00:00Z")
    _write(repo, {"src/orchard.py": "TREES = 4\nAPPLES_PER_TREE = 40\n", "NOTES.md": "staged\n"})
    _git(repo, "add", "NOTES.md")  # staged; src/orchard.py stays unstaged
    _write(repo, {"scratch.txt": "untracked\n"})
    return Seeded(folder, args=["--repository", str(repo)], git_repo=repo)


def seed_filesystem(folder: Path) -> Seeded:
    """A tree the server may read (its one allowed directory): text, Markdown, CSV, a PNG, an empty folder."""
    root = folder / "files"
    _write(
        root,
        {
            "docs/readme.md": "# Field notes\n\nSee notes/todo.txt.\n",
            "docs/notes/todo.txt": "water the plants\nrepot the fern\n",
            "data/harvest.csv": "month,kg\nmarch,12\napril,17\n",
            "data/pixel.png": PIXEL_PNG,
            "src/garden.py": "def plants():\n    return ['fern', 'basil']\n",
        },
    )
    (root / "empty").mkdir()
    return Seeded(folder, args=[str(root)])


MEMORY_GRAPH = [
    {"type": "entity", "name": "Ada Lovelace", "entityType": "person", "observations": ["wrote a program"]},
    {"type": "entity", "name": "Analytical Engine", "entityType": "machine", "observations": ["by Babbage"]},
    {"type": "entity", "name": "London", "entityType": "city", "observations": ["on the Thames"]},
    {"type": "relation", "from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"},
    {"type": "relation", "from": "Ada Lovelace", "to": "London", "relationType": "lived in"},
]


def seed_memory(folder: Path) -> Seeded:
    """A knowledge graph of three entities and two relations in the server's JSONL file."""
    memory = folder / "memory.jsonl"
    memory.write_text("\n".join(json.dumps(item) for item in MEMORY_GRAPH), encoding="utf-8")
    return Seeded(folder, env={"MEMORY_FILE_PATH": str(memory)})


def seed_time(folder: Path) -> Seeded:
    """No state but its folder; the local time zone is fixed so no machine's zone leaks in."""
    return Seeded(folder, args=["--local-timezone", "Europe/Paris"])


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def seed_fetch(folder: Path) -> Seeded:
    """No state but its folder; every request goes to a proxy on a closed local port, so no fetch
    leaves the machine, even where the internet is reachable."""
    return Seeded(folder, args=["--proxy-url", f"http://127.0.0.1:{closed_port()}"])


def seed_nothing(folder: Path) -> Seeded:
    """No state but its folder (the server keeps its state in memory)."""
    return Seeded(folder)


SERVERS: tuple[RealServer, ...] = (
    RealServer("git", "pypi", "mcp-server-git", "2026.10.19", "mcp-server-git", seed_git),
    RealServer("time", "pypi", "mcp-server-time", "2026.10.19", "mcp-server-time", seed_time),
    RealServer("fetch", "pypi", "mcp-server-fetch", "2026.10.24", "mcp-server-fetch", seed_fetch),
    RealServer(
        "filesystem",
        "npm",
        "@modelcontextprotocol/server-filesystem",
        "2026.8.31",
        "mcp-server-filesystem",
        seed_filesystem,
    ),
    RealServer(
        "memory", "npm", "@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory", seed_memory
    ),
    RealServer(
        "everything",
        "npm",
        "@modelcontextprotocol/server-everything",
        "2026.8.31",
        "mcp-server-everything",
        seed_nothing,
    ),
)


# Servers that annotate none of their tools: `check` calls none of them until their author trusts the
# read-only ones (`check.read_only`). One runs shell commands and gets no trust at all.


def seed_sqlite(folder: Path) -> Seeded:
    """A shop database: customers and orders, with a name holding `%` (which breaks string-built SQL)."""
    import sqlite3

    db = folder / "shop.db"
    with sqlite3.connect(db) as connection:
        connection.executescript(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),"
            " total REAL, placed_on TEXT);"
            "INSERT INTO customers VALUES (1, 'Ada', 'London'), (2, 'Grace', 'Arlington'),"
            " (3, '100% Juice Ltd', 'Paris');"
            "INSERT INTO orders VALUES (1, 1, 12.5, '2024-03-01'), (2, 2, 40.0, '2024-03-02'),"
            " (3, 1, 7.25, '2024-03-05');"
        )
    connection.close()
    return Seeded(folder, args=["--db-path", str(db)])


def seed_sqlite_npm(folder: Path) -> Seeded:
    """The same shop database for the npm SQLite server, which takes the file as its argument."""
    seeded = seed_sqlite(folder)
    return Seeded(folder, args=[seeded.args[-1]])


def seed_tasks(folder: Path) -> Seeded:
    """A task board with one request of two tasks, one done; its file named by the server's variable,
    so nothing is read or written under the real home."""
    board = {
        "requests": [
            {
                "requestId": "req-1",
                "originalRequest": "Plant the orchard",
                "splitDetails": "Two steps",
                "tasks": [
                    {"id": "task-1", "title": "Dig holes", "description": "Three holes", "done": True,
                     "approved": False, "completedDetails": "dug"},
                    {"id": "task-2", "title": "Plant trees", "description": "Apple trees", "done": False,
                     "approved": False, "completedDetails": ""},
                ],
                "completed": False,
            }
        ]
    }  # fmt: skip
    path = folder / "tasks.json"
    path.write_text(json.dumps(board, indent=2), encoding="utf-8")
    return Seeded(folder, env={"TASK_MANAGER_FILE_PATH": str(path)})


def seed_text_files(folder: Path) -> Seeded:
    """A few text documents in the server's working folder."""
    _write(
        folder,
        {
            "notes/plan.md": "# Plan\n\n1. Dig\n2. Plant\n3. Water\n",
            "notes/shopping.txt": "spade\nseeds\nwatering can\n",
        },
    )
    return Seeded(folder)


def seed_shell(folder: Path) -> Seeded:
    """A folder the shell server could change; only harmless commands are allowed, and none is trusted."""
    _write(folder, {"marker.txt": "untouched\n"})
    return Seeded(folder, env={"ALLOW_COMMANDS": "ls,cat,echo"})


UNANNOTATED: tuple[RealServer, ...] = (
    RealServer(
        "sqlite",
        "pypi",
        "mcp-server-sqlite",
        "2025.4.25",
        "mcp-server-sqlite",
        seed_sqlite,
        extra=("mcp<2",),
        read_only=("read_query", "list_tables", "describe_table"),
    ),
    RealServer(
        "sqlite-npm",
        "npm",
        "mcp-sqlite",
        "1.0.9",
        "mcp-sqlite-server",
        seed_sqlite_npm,
        read_only=("db_info", "list_tables", "get_table_schema", "read_records"),
    ),
    RealServer(
        "tasks",
        "npm",
        "@kazuph/mcp-taskmanager",
        "1.1.1",
        "mcp-taskmanager",
        seed_tasks,
        read_only=("list_requests", "open_task_details"),
    ),
    RealServer(
        "text-editor",
        "pypi",
        "mcp-text-editor",
        "1.0.2",
        "mcp-text-editor",
        seed_text_files,
        extra=("mcp<2",),
        read_only=("get_text_file_contents",),
    ),
    RealServer("shell", "pypi", "mcp-shell-server", "1.1.14", "mcp-shell-server", seed_shell),
)
BY_KEY = {server.key: server for server in (*SERVERS, *UNANNOTATED)}


# --- installation -----------------------------------------------------------------------------------


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or REPO / ".cache" / "real-servers")


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamp(servers: list[RealServer]) -> str:
    return "\n".join(sorted(server.pin for server in servers)) + "\n"


def _installed(folder: Path, stamp: str) -> bool:
    try:
        return (folder / STAMP).read_text(encoding="utf-8") == stamp
    except FileNotFoundError:
        return False


def _run(*commands: list[str]) -> str | None:
    """Run the commands in order; None when all succeed, else the failing one's output."""
    for command in commands:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            return f"{' '.join(command)} exited {done.returncode}:\n{(done.stdout + done.stderr).strip()}"
    return None


def _pypi_commands(server: RealServer, folder: Path) -> list[list[str]]:
    """A venv of the server's own (never ours: it needs mcp 1.x), and the pin installed into it."""
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    return [[sys.executable, "-m", "venv", "--clear", str(folder)], [*pip, *server.pin.split(" ")]]


def install(
    cache: Path | None = None,
    *,
    servers: tuple[RealServer, ...] | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Path:
    """Install every server of `servers` (default SERVERS) that is missing or at another version; return
    the cache folder.

    The PyPI servers' venvs are built in parallel with the npm install. Raises
    RuntimeError naming the package and quoting pip's or npm's output when one fails.
    """
    cache = cache or cache_dir()
    with _locked(cache):
        jobs: dict[str, tuple[Path, str, list[list[str]]]] = {}
        chosen = SERVERS if servers is None else servers
        for server in (s for s in chosen if s.registry == "pypi"):
            folder, stamp = server.folder(cache), _stamp([server])
            if not _installed(folder, stamp):
                jobs[server.pin] = (folder, stamp, _pypi_commands(server, folder))
        npm = [s for s in chosen if s.registry == "npm"]
        folder, stamp = (npm[0].folder(cache) if npm else cache / NPM_FOLDER), _stamp(npm)
        if npm and not _installed(folder, stamp):
            if shutil.which("npm") is None:
                raise RuntimeError("installing the npm servers needs node and npm (as the agent CLIs do)")
            shutil.rmtree(folder, ignore_errors=True)
            npm_install = [
                "npm",
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ]
            jobs[", ".join(s.pin for s in npm)] = (folder, stamp, [[*npm_install, *(s.pin for s in npm)]])
        for what, (folder, _, _) in jobs.items():
            log(f"installing {what} into {folder}")
        with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
            outcomes = {what: pool.submit(_run, *commands) for what, (_, _, commands) in jobs.items()}
        failures = []
        for what, outcome in outcomes.items():
            folder, stamp, _ = jobs[what]
            if (failed := outcome.result()) is not None:
                failures.append(f"{what}: {failed}")
            else:
                (folder / STAMP).write_text(stamp, encoding="utf-8")
        if failures:
            raise RuntimeError("could not install the published servers:\n" + "\n".join(failures))
    return cache


# --- state ------------------------------------------------------------------------------------------


def tree_state(root: Path, *, skip: Callable[[Path], bool] = lambda _: False) -> dict[str, tuple]:
    """Every entry under `root`: (kind, bytes, mtime_ns) for files, (kind, mtime_ns) for folders."""
    entries: dict[str, tuple] = {}
    for path in sorted(root.rglob("*")):
        if skip(path):
            continue
        stat = path.lstat()
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            entries[name] = ("link", os.readlink(path), stat.st_mtime_ns)
        elif path.is_dir():
            entries[name] = ("dir", stat.st_mtime_ns)
        else:
            entries[name] = ("file", path.read_bytes(), stat.st_mtime_ns)
    return entries


def git_state(repo: Path) -> dict[str, str]:
    """What git says the repository is: refs, HEAD, status, index entries, reflogs, stashes."""
    return {
        "refs": _git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": _git(repo, "symbolic-ref", "HEAD") + _git(repo, "rev-parse", "HEAD"),
        "status": _git(repo, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "index": _git(repo, "ls-files", "--stage"),
        "reflog": _git(repo, "reflog", "show", "--all", "--format=%gd %H %gs"),
        "stash": _git(repo, "stash", "list"),
    }


def _git_bookkeeping(path: Path) -> bool:
    """`.git/index` and the mtime of `.git/` itself: what git rewrites when it only reads (below)."""
    return path.name == ".git" or (path.name == "index" and path.parent.name == ".git")


def snapshot(seeded: Seeded) -> Snapshot:
    """The state a check must leave as it found it.

    The files of `.git/` count too, except `index` and the folder's own mtime:
    git refreshes the stat cache in the index whenever it reads the working
    tree (`git status` run by a person does it too), writing a new index
    through `index.lock` beside it. The index's entries are compared through
    `git ls-files --stage` instead, so a staged or unstaged change still shows.
    """
    tree = tree_state(seeded.folder, skip=_git_bookkeeping)
    state: Snapshot = {"tree": tree}
    if seeded.git_repo is not None:
        state["git"] = git_state(seeded.git_repo)
    return state


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description="Install the published MCP servers the benchmark and tests use."
    )
    parser.add_argument("action", choices=["install", "list"])
    parser.add_argument(
        "--unannotated", action="store_true", help="The servers that annotate none of their tools."
    )
    opts = parser.parse_args()
    chosen = UNANNOTATED if opts.unannotated else SERVERS
    if opts.action == "list":
        for server in chosen:
            print(f"{server.key:<11} {server.pin}")
        return
    cache = install(servers=chosen, log=lambda line: print(line, file=sys.stderr))
    print(cache)


if __name__ == "__main__":
    main()
