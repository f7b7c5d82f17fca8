"""One lock per project, held by every command that writes its runs, its findings home or its server.

Two writers in one project corrupt each other quietly: a `mcpipechekr run`
started beside `doit loop` plans the same run folder, so the loop would trace
into one run and evaluate another. Every writing command (`run`, `import`,
`evaluate`, `review` with a decision, `fix`, `baseline`, `lint` (its cache and
pins live in the home), `index`, `promote`, `annotate`, `generate`, `verify`,
`server prepare`, and doit's commands other than `list`, `help`, `info`, …)
therefore holds `.mcpipechekr/project.lock` in the project folder while it
works; a second one stops at once with a message naming the holder. Reading commands never touch the lock.

The project folder is the folder of the config file: the CLI's `--config`
(default `config.yaml` in the working folder) and doit's `--config` (taken
from doit's folder) lead one project to one lock file. Commands without a
config (`index`, `promote`, …) work on the findings home of the working
folder, so they lock the working folder.

The lock is `flock`: the kernel drops it when its holder dies, even by
SIGKILL, so a dead holder never blocks. The file's contents only describe the
holder (pid, command line, since when) for the message; they are never
trusted for the decision, except to recognise a holder as our own:

- Within one process the lock is reentrant: `doit loop` runs nested doit
  invocations and every step in-process, and they all share the one holding.
- A child process of the holder is working for it: the fix agent runs
  `mcpipechekr` commands, a test command or the server. The holder puts its
  token into `$MCPIPECHEKR_PROJECT_LOCK`, which children inherit; a command
  that finds the lock taken by a holder whose token it carries, or whose pid is
  one of its ancestors (for a child started with a cleaned environment), goes
  on without the lock instead of deadlocking on its own parent.

`mcpipechekr capture` and `mcpipechekr serve` never take the lock: MCP
clients and coding agents keep them running for whole sessions, beside any
command, and their writes (journal records under `journals.lock`, verification
evidence in lifecycle.db's transactions) are safe next to a pipeline step.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shlex
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from mcpipechekr._util.leftover_processes import end_leftovers
from mcpipechekr._util.process_group import parent_pid
from mcpipechekr._util.user_error import UserError

LOCK_PATH = Path(".mcpipechekr") / "project.lock"
"""The lock file, relative to the project folder (beside doit's state and the default findings home)."""

TOKEN_ENV = "MCPIPECHEKR_PROJECT_LOCK"
"""Tokens of the holdings this process works under (its own and its ancestors'), space-separated."""


@dataclass(frozen=True)
class Holder:
    """What the lock file says about the process holding it; only a description, never the lock itself."""

    pid: int
    command: str
    since: str
    token: str

    def describe(self) -> str:
        """`pid 123: doit loop, since 18:02:11` (the day too when it is not today)."""
        try:
            started = datetime.fromisoformat(self.since).astimezone()
        except ValueError:
            return f"pid {self.pid}: {self.command}"
        today = datetime.now().astimezone().date()
        when = started.strftime("%H:%M:%S" if started.date() == today else "%Y-%m-%d %H:%M:%S")
        return f"pid {self.pid}: {self.command}, since {when}"


class ProjectBusy(UserError):
    """Another process holds the project's lock: the message names it and the lock file."""

    def __init__(self, holder: Holder | None, lock_file: Path):
        who = holder.describe() if holder is not None else "a process that is just starting"
        super().__init__(
            f"another mcpipechekr command is working in this project ({who}); wait for it to finish, "
            f"then run the command again. ({_shown(lock_file)})"
        )


@dataclass
class _Holding:
    fd: int
    depth: int
    token: str


_held: dict[Path, _Holding] = {}
_guard = threading.Lock()


def lock_file(project: Path) -> Path:
    """The lock file of the project in folder `project`, as an absolute path (one key per project)."""
    return (Path(project).resolve() / LOCK_PATH).resolve()


def command_line(argv: list[str] | None = None) -> str:
    """This process's command line as a person typed it: `doit loop --repeat 2`, `mcpipechekr run`."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return "mcpipechekr"
    program = Path(argv[0])
    name = program.parent.name if program.name == "__main__.py" else program.name
    text = shlex.join([name, *argv[1:]])
    return text if len(text) <= 120 else text[:117] + "..."


@contextlib.contextmanager
def project_lock(project: Path, command: str | None = None) -> Iterator[None]:
    """Hold the project's lock around a block of work, or raise ProjectBusy naming the holder.

    Reentrant in one process; a process working for the holder (see the module
    docstring) goes on without it.
    """
    path = lock_file(project)
    taken = _take(path, command or command_line())
    try:
        yield
    finally:
        if taken:
            _release(path)


def hold_project_lock(project: Path, command: str | None = None) -> None:
    """Hold the project's lock until this process ends (doit's dodo.py import has no block to wrap)."""
    _take(lock_file(project), command or command_line())


def _take(path: Path, command: str) -> bool:
    """True when this call now counts as a holding of `path` (to release later)."""
    with _guard:
        holding = _held.get(path)
        if holding is not None:
            holding.depth += 1
            return True
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # never removed: see findings/locking.py
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            if holder is not None and _works_for(holder):
                return False
            raise ProjectBusy(holder, path) from None
        token = secrets.token_hex(8)
        since = datetime.now().astimezone().isoformat(timespec="seconds")
        record = {"pid": os.getpid(), "command": command, "since": since, "token": token}
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(record) + b"\n", 0)
        tokens = os.environ.get(TOKEN_ENV, "").split()
        os.environ[TOKEN_ENV] = " ".join([*tokens, token])
        _held[path] = _Holding(fd, 1, token)
    end_leftovers(path)  # a holder before us died: what it started and noted may still run
    return True


def held_lock_file() -> Path | None:
    """The project lock file this process holds (the first, if several); None when it holds none.

    A process working for another holder (a child of it) answers None: what it
    starts is its parent's to stop.
    """
    with _guard:
        return next(iter(_held), None)


def _release(path: Path) -> None:
    with _guard:
        holding = _held[path]
        holding.depth -= 1
        if holding.depth:
            return
        del _held[path]
        tokens = [token for token in os.environ.get(TOKEN_ENV, "").split() if token != holding.token]
        if tokens:
            os.environ[TOKEN_ENV] = " ".join(tokens)
        else:
            os.environ.pop(TOKEN_ENV, None)
        os.ftruncate(holding.fd, 0)  # the description would outlive the holding otherwise
        os.close(holding.fd)  # closing the last descriptor drops the flock


def _read_holder(fd: int) -> Holder | None:
    try:
        data = orjson.loads(os.pread(fd, 4096, 0))
        return Holder(int(data["pid"]), str(data["command"]), str(data["since"]), str(data["token"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # empty (the holder has not written it yet) or not ours


def _works_for(holder: Holder) -> bool:
    """True when this process runs on behalf of `holder`: it carries its token, or descends from it."""
    return holder.token in os.environ.get(TOKEN_ENV, "").split() or holder.pid in _ancestors()


def _ancestors() -> set[int]:
    """The pids above this process, read from /proc where there is one (else just the parent)."""
    found: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        parent = parent_pid(pid)
        if parent is None:
            break
        pid = parent
    return found


def _shown(path: Path) -> str:
    """The lock file as the message shows it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
