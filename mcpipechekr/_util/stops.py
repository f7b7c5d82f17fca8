"""How a command ends when the user presses Ctrl-C or the system refuses a file operation.

Both are foreseeable, so neither may end in a traceback. Ctrl-C ends every
command, and doit, with exit status 130 (the shell's convention for SIGINT)
and one line saying what was kept: the library notes each run folder it opens
(`note_kept`), because everything written there before the interrupt stays,
and running the command again resumes from it. A refused file operation (disk
full, no permission, read-only file system, ...) becomes one line naming the
operation and the file, and exit status 2 like any other user error.

Only the front ends (the click group, doit's actions) translate; the library
lets KeyboardInterrupt and OSError propagate, so that every `finally` and
`with` on the way cleans up first (temporary files, manifest status).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sqlite3
import threading
from pathlib import Path

INTERRUPTED_EXIT = 130
"""Exit status after Ctrl-C: 128 + SIGINT, what shells report for a process ended by it."""

FORESEEABLE_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file is larger than allowed",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files in the system",
    errno.EIO: "an input/output error",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "it is a folder",
    errno.ELOOP: "too many symbolic links",
}
"""OSErrors a user can act on (free space, fix permissions), with how each is said."""

FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A write that found no room: the file being written is the one to name."""

_kept: list[Path] = []


def note_kept(path: str | Path) -> None:
    """Remember a folder this process writes results into, for the line printed on Ctrl-C."""
    path = Path(path)
    if path not in _kept:
        _kept.append(path)


def interrupted_line() -> str:
    """The one line printed on Ctrl-C: what was kept, and how to go on."""
    if not _kept:
        return "interrupted (Ctrl-C): what was written before it is kept"
    folders = ", ".join(_shown(path) for path in _kept)
    return f"interrupted (Ctrl-C): kept what was written in {folders}; run the command again to go on"


SQLITE_STORAGE_CODES = frozenset({3, 8, 10, 13, 14})
"""SQLite's primary result codes for storage it cannot use: PERM, READONLY, IOERR, FULL, CANTOPEN.

SQLite reports a full disk as IOERR as often as FULL (a write, an fsync), so all of them count."""


def is_foreseeable(error: BaseException) -> bool:
    """A refused file operation (`FORESEEABLE_ERRNOS`), or SQLite's word for one (`SQLITE_STORAGE_CODES`)."""
    if isinstance(error, OSError):
        return error.errno in FORESEEABLE_ERRNOS
    return is_storage_failure(error)


def is_storage_failure(error: BaseException) -> bool:
    code = getattr(error, "sqlite_errorcode", None) if isinstance(error, sqlite3.Error) else None
    return code is not None and code & 0xFF in SQLITE_STORAGE_CODES


def database_error_line(error: sqlite3.Error, path: str | Path | None = None) -> str:
    """`the database .mcpipechekr/lifecycle.db could not be used: disk I/O error (SQLITE_IOERR_WRITE); …`."""
    what = f"the database {_shown(Path(path))}" if path is not None else "a database"
    name = getattr(error, "sqlite_errorname", "")
    return (
        f"{what} could not be used: {error}{f' ({name})' if name else ''}; "
        "is the disk full, or its folder read-only?"
    )


def os_error_line(error: OSError) -> str:
    """`cannot write runs/x/trace.json: the disk is full (ENOSPC)`; the file when the error names one."""
    code = errno.errorcode.get(error.errno or 0, "")
    why = FORESEEABLE_ERRNOS.get(error.errno or 0) or error.strerror or str(error)
    what = f"{why} ({code})" if code else why
    files = [name for name in (error.filename, error.filename2) if name is not None]
    if not files:
        return f"a file operation failed: {what}"
    named = " -> ".join(_shown(Path(os.fsdecode(name))) for name in files)
    return f"a file operation failed on {named}: {what}"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def with_filename(error: OSError, path: str | Path) -> OSError:
    """`error` as it would read had it named `path` (a write through a descriptor names no file).

    The errno picks the same subclass (PermissionError, ...), so handlers see the same kind of error.
    """
    return OSError(error.errno, error.strerror, os.fspath(path))


# --- process groups to end on Ctrl-C ---------------------------------------------------------------

_groups: set[int] = set()
_groups_lock = threading.Lock()


def own_group(pgid: int) -> None:
    """Note a process group this process started (a server under test) until `release_group`.

    Why: a step running in one of doit's worker threads never sees Ctrl-C (only
    the main thread does), so its `finally` never stops the server it started;
    the front end ends what is still noted (`end_owned_groups`) before it exits.
    """
    with _groups_lock:
        _groups.add(pgid)


def release_group(pgid: int) -> None:
    with _groups_lock:
        _groups.discard(pgid)


def end_owned_groups() -> None:
    """SIGKILL every process group still noted: the process is about to exit and would orphan them."""
    with _groups_lock:
        groups = set(_groups)
        _groups.clear()
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
