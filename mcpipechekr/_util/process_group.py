"""Process groups we start, told apart from later ones with the same id, and ended whole.

Servers, capture proxies and fix agents each lead a session and process group
of their own (`start_new_session`), so everything they start can be signalled
together. A group id alone is not an identity: once the group is gone the
kernel may hand its id to a new process. A group is therefore remembered with
its leader's start mark (on Linux the boot id and the start time in clock ticks
since boot, from /proc; elsewhere `ps`'s start time), and ended only while that
mark still matches. A leader that has exited leaves its group id reserved while
any member lives, so members found under it on the same boot are still ours.
Zombies (members already dead, waiting to be reaped by a parent that may never
do so) do not count as running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

GRACE_S = 3.0
"""How long a signalled group has to exit after SIGTERM before SIGKILL."""

_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys" / "kernel" / "random" / "boot_id"


def _proc_stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields from the state on (state, ppid, pgrp, session, …); None when gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses


def _start_mark(pid: int) -> str | None:
    """What tells this process apart from a later one with the same id: boot and start time."""
    if _PROC.is_dir():
        fields = _proc_stat(pid)
        if fields is None:
            return None
        boot = _BOOT_ID.read_text().strip() if _BOOT_ID.exists() else ""
        return f"{boot}:{fields[19]}"  # field 22 of stat: starttime, counted from the state (field 3)
    started = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True)
    return started.stdout.strip() or None


def _members(pgid: int) -> list[int] | None:
    """Running (not zombie) processes of group `pgid`; None where /proc cannot tell."""
    if not _PROC.is_dir():
        return None
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _proc_stat(int(entry.name))
        if fields is not None and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def group_running(pgid: int) -> bool:
    """Whether any process of group `pgid` is still running."""
    members = _members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user, which we may not signal, too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (where /proc cannot tell: whether it exists)."""
    if pid <= 0:
        return False
    if not _PROC.is_dir():
        return pid_alive(pid)
    fields = _proc_stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def parent_pid(pid: int) -> int | None:
    """The parent of `pid` from /proc; None where /proc cannot tell (gone, or no /proc)."""
    fields = _proc_stat(pid)
    return int(fields[1]) if fields is not None else None


def process_start(pid: int) -> str | None:
    """`pid`'s start time in clock ticks since boot (Linux's /proc), or None where it cannot be read."""
    fields = _proc_stat(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None  # field 22 of stat


def start_mark(pid: int) -> str | None:
    """The mark that tells process `pid` apart from a later one with its id; None when it is gone."""
    return _start_mark(pid)


def same_group(pgid: int, started: str) -> bool:
    """Whether group `pgid`, whose leader had start mark `started`, is still that group and running."""
    now = _start_mark(pgid)
    if now is not None:
        return now == started
    if not started or not group_running(pgid):
        return False
    boot = started.split(":", 1)[0]
    return _BOOT_ID.exists() and _BOOT_ID.read_text().strip() == boot


def end_group(pgid: int, grace_s: float = GRACE_S) -> bool:
    """SIGTERM the whole group, SIGKILL it after `grace_s`; True when something was running."""
    if not group_running(pgid):
        return False
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not group_running(pgid):
                return True
            time.sleep(0.05)
    return True


def group_cpu_seconds(pgid: int) -> float | None:
    """CPU seconds (user and system, with waited-for children) the processes of group `pgid` used so far;
    None where /proc cannot tell.

    How a server's start is told apart: CPU-bound (loading, indexing) or waiting (sleeping, network).
    """
    if not _PROC.is_dir():
        return None
    ticks = 0
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _proc_stat(int(entry.name))
        if fields is not None and int(fields[2]) == pgid:
            ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")
