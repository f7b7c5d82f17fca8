"""Temporary files beside their target: how they are named, and removing those whose writer is gone.

A file is written whole by writing a hidden sibling first and renaming (or
linking) it into place. The sibling is named ``.<target>.tmp-<pid>-<random>``:
hidden, never equal to the target's name, and traceable to the process that
made it. A process killed with SIGKILL cannot remove its sibling, so the next
writer of the same target removes those whose process is gone
(``remove_dead_temps``); those of live processes stay, as they may still be
writing. `artifacts/atomic.py` and `once.py` write through these names.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

from mcpipechekr._util.process_group import pid_alive

TMP_MARKER = ".tmp-"


def temp_name_for(target: Path) -> str:
    """A unique sibling name for ``target``; hidden and never equal to the target's own name."""
    return f".{target.name}{TMP_MARKER}{os.getpid()}-{secrets.token_hex(4)}"


def is_temp_file(path: str | Path) -> bool:
    """True for a leftover of an interrupted atomic write (safe to delete once its writer is gone)."""
    name = Path(path).name
    return name.startswith(".") and TMP_MARKER in name


def writer_pid(path: str | Path, target_name: str) -> int | None:
    """The pid in the name of a temporary file of ``target_name``, or None for any other file."""
    pattern = rf"\.{re.escape(target_name)}{re.escape(TMP_MARKER)}(\d+)-[0-9a-f]+"
    found = re.fullmatch(pattern, Path(path).name)
    return int(found.group(1)) if found else None


def remove_dead_temps(target: str | Path) -> list[Path]:
    """Delete the temporary files of ``target`` whose writer is gone; returns them.

    A writer killed mid-write leaves its temporary file; nothing else ever
    removes it. A live process with the same id (the writer itself, or one that
    reused its id) keeps its file: a leftover is better than a write cut short.
    """
    folder = Path(target).parent
    name = Path(target).name
    removed = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    for entry in entries:
        pid = writer_pid(entry.name, name)
        if pid is None or pid_alive(pid):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed
