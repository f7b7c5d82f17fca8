"""The fix agent's process group: named in fix.json while it runs, ended with everything it started.

Each agent run is the leader of a new session and process group
(`runners.cliagent.run_cli`), so the agent, the shell commands it runs and
the servers those start can be signalled together. The loop ends that group
on a timeout, on Ctrl-C and on SIGTERM (handled as Ctrl-C). What it cannot
do is end it when the loop itself is SIGKILLed: the group then runs on,
orphaned, still editing the server's repository. So the group is recorded
in fix.json (`AgentProcess`: its id and its leader's start time) from the
moment it starts, and the next fix loop on the run ends a group it finds
there before it restores the work tree.

Why not a parent-death signal (Linux's `prctl(PR_SET_PDEATHSIG)`): it is
delivered when the *thread* that started the child exits, not the process
(a fix loop driven from a worker thread would kill its agent at once); it
reaches the agent only, not the grandchildren that edit files in its name;
and asyncio's subprocess API (which `run_cli` uses) takes no `preexec_fn` to
set it. The recorded group has none of these limits; its own limit is that
the agent runs on until the next fix loop on that run, or the next reboot.

A recorded group is ended only while it is provably the same one: on Linux
the boot and the leader's start time (clock ticks since boot, from /proc)
must match; a leader that has exited leaves its group id reserved while any
member lives, so members found under it on the same boot are the agent's.
Elsewhere the leader's start time comes from `ps`. Zombies (members already
dead, waiting to be reaped by a parent that may never do so) do not count
as running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from mcpipechekr.artifacts.fix_record import AgentProcess

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


def record_group(pid: int) -> AgentProcess:
    """The group a freshly started agent leads (`start_new_session`), as fix.json records it."""
    return AgentProcess(pgid=pid, started=_start_mark(pid) or "")


def is_ours(process: AgentProcess) -> bool:
    """Whether the recorded group is still the agent's (see the module docstring), and running."""
    now = _start_mark(process.pgid)
    if now is not None:
        return now == process.started
    if not process.started or not group_running(process.pgid):
        return False
    boot = process.started.split(":", 1)[0]
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


def end_leftover(process: AgentProcess) -> bool:
    """End a recorded agent group left by a killed fix loop; True when one was still running."""
    if not is_ours(process):
        return False
    return end_group(process.pgid)
