"""Files made once and never changed (the review key, the findings salt): whole or absent, first one wins.

Why: creating such a file with `O_CREAT | O_EXCL` and then writing it leaves
an empty file when the process is killed between the two (SIGKILL, the
out-of-memory killer), and a reader in between sees it empty too. An empty
key or salt is worse than none: it is read as the secret forever after. So
the content is written to a private temporary sibling first (named as in
`tempfiles.py`), synced, and hard-linked to its name: the link publishes it
whole, and fails when another writer got there first, whose content then wins.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mcpipechekr._util.tempfiles import remove_dead_temps, temp_name_for


def _written_temp(path: Path, data: bytes, mode: int) -> Path:
    """A synced temporary sibling of `path` holding `data`, with `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(path)
    tmp = path.parent / temp_name_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def create_once(path: Path, data: bytes, *, mode: int = 0o600) -> bytes:
    """Publish `data` at `path` unless a file is there already; returns the content in force there."""
    tmp = _written_temp(path, data, mode)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return path.read_bytes()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return data


def replace_whole(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` in one step (for a file found damaged, which nobody can have used)."""
    os.replace(_written_temp(path, data, mode), path)
