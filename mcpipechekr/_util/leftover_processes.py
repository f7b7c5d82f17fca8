"""Processes a command starts that would outlive it if it were killed, ended by the next command.

An HTTP server with a `start` command runs in a process group of its own,
detached from its terminal, and does not stop when its stdin closes. Its
command stops it on the way out, Ctrl-C included; a SIGKILL of the command,
though, leaves it running and holding its port, and the next run would then
either fail to listen or, worse, test the old code still answering there.

So while a process holds the project lock (`project_lock.py`), each such
group it starts is noted in `.mcpipechekr/processes/<pgid>.json` beside the
lock (its id and its leader's start mark) and the note removed once the group
is stopped. A note left behind can only come from a holder that died: the
next command to take the lock ends the group if it is still the same one
(`process_group.same_group`) and removes the note. Without a project lock
(a library call from a test or a script) nothing is noted.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import orjson

from mcpipechekr._util.console import err_console
from mcpipechekr._util.process_group import end_group, same_group, start_mark

FOLDER = "processes"
"""The notes' folder, beside the project lock file."""


def _folder(lock_file: Path) -> Path:
    return lock_file.parent / FOLDER


def note_started(lock_file: Path | None, pgid: int, what: str) -> None:
    """Note a group just started by the holder of `lock_file` (nothing without a lock)."""
    if lock_file is None:
        return
    folder = _folder(lock_file)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"pgid": pgid, "started": start_mark(pgid) or "", "what": what, "by": os.getpid()}
    path = folder / f"{pgid}.json"
    temporary = folder / f".{pgid}.json.{os.getpid()}.tmp"
    temporary.write_bytes(orjson.dumps(record))
    os.replace(temporary, path)


def note_stopped(lock_file: Path | None, pgid: int) -> None:
    """Forget a group the holder of `lock_file` stopped itself."""
    if lock_file is not None:
        with contextlib.suppress(FileNotFoundError):
            (_folder(lock_file) / f"{pgid}.json").unlink()


def end_leftovers(lock_file: Path) -> list[str]:
    """End the groups noted by dead holders of `lock_file` (just taken); what was ended, in words."""
    folder = _folder(lock_file)
    if not folder.is_dir():
        return []
    ended = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):  # a note half made by a holder that died writing it
            path.unlink(missing_ok=True)
            continue
        try:
            record = orjson.loads(path.read_bytes())
            pgid, started, what = int(record["pgid"]), str(record["started"]), str(record["what"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            path.unlink(missing_ok=True)
            continue
        if int(record.get("by", 0)) == os.getpid():
            continue  # this process's own, still running: it stops them itself
        if same_group(pgid, started) and end_group(pgid):
            ended.append(f"{what} (process group {pgid})")
        path.unlink(missing_ok=True)
    for line in ended:
        err_console.print(f"ended {line}, left running by a command that was killed", markup=False)
    return ended
