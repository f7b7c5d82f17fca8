"""Temporary files beside their target: how they are named, and removing those whose writer is gone.

A file is written whole by writing a hidden sibling first and renaming (or
linking) it into place. The sibling is named ``.<target>.tmp-<pid>-<random>``:
hidden, never equal to the target's name, and traceable to the process that
made it. A process killed with SIGKILL cannot remove its sibling, so the next
writer of the same target removes those whose process is gone
(``remove_dead_temps``); those of live processes stay, as they may still be
writing. `artifacts/atomic.py` and `once.py` write through these names.

Temporary folders are named the same way for the same reason
(`own_temp_folder`: `mcpipechekr-<what>-p<pid>-<random>` in the temp folder),
and every process of ours removes those whose process is gone when it starts
(`sweep_dead_temp_folders`).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
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


OWN_FOLDER = re.compile(r"^mcpipechekr-.*-p(\d+)-[A-Za-z0-9_]+$")
"""A temporary folder of ours: `mcpipechekr-<what>-p<pid>-<random>` (`own_temp_folder`)."""
LEGACY_SECRETS = "capture-secrets.json"
"""The file in which versions before 0.1 handed the capture proxy its secrets; none is written now."""


def own_temp_prefix(what: str) -> str:
    """The prefix of a temporary folder of ours for `what`: it names this process, so that a later run
    can remove it once the process is gone (`sweep_dead_temp_folders`)."""
    return f"mcpipechekr-{what}-p{os.getpid()}-"


def own_temp_folder(what: str, folder: str | Path | None = None) -> Path:
    """A private temporary folder (0700) named after `what` and this process (see `own_temp_prefix`)."""
    return Path(tempfile.mkdtemp(prefix=own_temp_prefix(what), dir=folder))


def sweep_dead_temp_folders(root: str | Path | None = None) -> list[Path]:
    """Remove the temporary folders of ours whose process is gone; returns them.

    A process killed with SIGKILL (the out-of-memory killer, a closed laptop)
    cannot remove its folders: agent work folders, scratch logs, sandbox homes.
    They may hold what an agent or a server wrote, so every process of ours
    sweeps them at start. Only folders of this user, named by
    `own_temp_folder`, whose process is gone are removed (a live process with
    the same id keeps its folder); from folders of older versions, which carry
    no process id, only the secrets file they were given is removed.
    """
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith("mcpipechekr-") or not _own_folder(entry):
            continue
        found = OWN_FOLDER.match(entry.name)
        if found is not None:
            if not pid_alive(int(found.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
            continue
        legacy = Path(entry.path) / LEGACY_SECRETS
        with contextlib.suppress(OSError):
            if legacy.is_file() and not legacy.is_symlink():
                legacy.unlink()
                removed.append(legacy)
    return removed


def _own_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid()
    except OSError:
        return False
