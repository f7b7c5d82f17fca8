"""runs/{run-id}/.owner.lock: which process works on a run, so that a run whose process died is seen as such.

A manifest says `running` while a step works on the run, and the step's end
rewrites it. A process killed outright (SIGKILL, a lost terminal, a crash of
the interpreter) never reaches that end, and its run would look alive for
ever. So the process that works on a run holds an exclusive `flock` on this
file for as long as it works, and writes into it who it is: its pid, the
start time of that pid, and when it took the lock.

The kernel drops a flock when its holder ends, however it ends, so the
owner is *gone* when the lock is free. A held lock is still checked against
the pid it names: the pid must be alive and have the recorded start time
(Linux: field 22 of /proc/<pid>/stat, in clock ticks since boot), or the pid
was reused by another process. Where /proc is missing the start time is not
recorded and only the lock and the pid's liveness count.

Python opens files close-on-exec, so the servers and agents a step starts
never inherit the lock. The file stays after its owner is done: its last
content says who worked on the run last. flock is advisory and local: a run
folder on a network file system shared by two machines is not protected.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from pydantic import AwareDatetime, BaseModel, ConfigDict, ValidationError

from mcpipechekr._util.process_group import pid_alive, process_start
from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.errors import UserError

OWNER_FILE = ".owner.lock"


class RunOwner(BaseModel):
    """What the lock file says about the process that holds (or last held) it."""

    model_config = ConfigDict(extra="ignore")

    pid: int
    start: str | None = None
    since: AwareDatetime


def owner_path(run_dir: RunDir) -> Path:
    """Where a run's owner lock lives."""
    return run_dir.root / OWNER_FILE


def read_owner(run_dir: RunDir) -> RunOwner | None:
    """The owner the lock file names, or None when there is no file or it says nothing readable."""
    try:
        return RunOwner.model_validate_json(owner_path(run_dir).read_bytes())
    except (OSError, ValidationError):
        return None


@dataclass
class OwnerLock:
    """The lock of one run, held by this process."""

    run_dir: RunDir
    handle: IO[str]

    def release(self) -> None:
        """Let go of the run (the file and its content stay: they name the last owner)."""
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def take_run(run_dir: RunDir) -> OwnerLock:
    """Become the run's owner, or a UserError naming the live process that owns it."""
    handle = open(owner_path(run_dir), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        owner = read_owner(run_dir)
        who = f"pid {owner.pid}, since {_stamp(owner.since)}" if owner else "another process"
        raise UserError(
            f"{run_dir.run_id} is being worked on by another process ({who}); wait for it to end, "
            "then run the command again."
        ) from None
    me = os.getpid()
    record = RunOwner(pid=me, start=process_start(me), since=utc_now())
    handle.seek(0)
    handle.truncate()
    handle.write(record.model_dump_json())
    handle.flush()
    return OwnerLock(run_dir, handle)


@dataclass(frozen=True)
class GoneOwner:
    """A run's owner that no longer works on it, and what can be said of it."""

    pid: int | None
    last_seen: datetime

    def describe(self) -> str:
        """One line for the manifest's `status_reason`."""
        who = f"the process that ran it (pid {self.pid})" if self.pid else "the process that ran it"
        return f"{who} is gone; last seen {_stamp(self.last_seen)}"


def gone_owner(run_dir: RunDir, *, lock_free: bool | None = None) -> GoneOwner | None:
    """The run's owner when it is gone (see the module docstring), None while it still works.

    `lock_free` is given by a caller that already tried the lock itself.
    """
    if lock_free is None:
        lock_free = _lock_is_free(run_dir)
    owner = read_owner(run_dir)
    if not lock_free and owner is not None and _same_process_alive(owner):
        return None
    if not lock_free and owner is None:
        return None  # held, and its holder is writing who it is at this very moment
    return GoneOwner(owner.pid if owner else None, last_seen(run_dir))


def _same_process_alive(owner: RunOwner) -> bool:
    if not pid_alive(owner.pid):
        return False
    return owner.start is None or process_start(owner.pid) in (None, owner.start)


def _lock_is_free(run_dir: RunDir) -> bool:
    try:
        handle = open(owner_path(run_dir))
    except FileNotFoundError:
        return True
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def try_take_run(run_dir: RunDir) -> OwnerLock | None:
    """The run's lock if nobody holds it, without waiting and without naming this process its owner.

    For a reader that rewrites a dead owner's manifest: holding the lock meanwhile keeps a new
    owner from starting between the check and the write.
    """
    try:
        handle = open(owner_path(run_dir), "a+")
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return OwnerLock(run_dir, handle)


def last_seen(run_dir: RunDir) -> datetime:
    """When the run's files last changed: the manifest, the lock, the traces and journals."""
    paths = [run_dir.manifest, owner_path(run_dir)]
    for folder in (run_dir.traces, run_dir.root / "journals"):
        if folder.is_dir():
            paths += list(folder.iterdir())
    times = []
    for path in paths:
        try:
            times.append(path.stat().st_mtime)
        except OSError:
            continue
    newest = max(times, default=utc_now().timestamp())
    return datetime.fromtimestamp(newest, tz=utc_now().tzinfo)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(utc_now().tzinfo).strftime("%Y-%m-%dT%H:%M:%SZ")
