"""Reading and writing a file inside a folder without ever leaving it, whatever lies on the way.

For files whose name is chosen by someone the folder's owner does not trust
(an MCP client of `mcpipechekr serve`). The name is a sequence of plain
parts, never a path: a part that is empty, `.`, `..`, or holds a separator or
a NUL is refused before anything is opened. Then every folder from the root
down is opened relative to the one above it (`openat`) with `O_NOFOLLOW`, and
the file itself too, so a symbolic link anywhere below the root, in place of
the file or of a folder on the way, is refused rather than followed, even one
planted while the call runs:

- a write is atomic like `atomic.py`'s: a temporary file created with
  `O_EXCL | O_NOFOLLOW` in the opened folder, fsynced, renamed over the
  target in that same folder (a rename replaces a link, it never writes
  through one), the folder fsynced; a link or anything but a regular file
  already at the target is refused;
- a read takes only a regular file with a single link (a hard link shares
  its bytes with a file elsewhere) of at most `MAX_READ_BYTES`, opened
  non-blocking so a FIFO cannot stall it.

Errors name the path and what was wrong with it, never the file's content.
The root itself is taken as given: callers resolve it once, when they start.
POSIX only (`dir_fd`, `O_NOFOLLOW`), like the rest of the findings home.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from mcpipechekr.artifacts.atomic import temp_name_for
from mcpipechekr.errors import UserError

MAX_READ_BYTES = 1 << 20
"""The largest file `read_confined` reads (1 MiB)."""

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class ConfinedPathError(UserError):
    """A name or a file that would lead outside the folder, or is not a plain file or folder."""


def write_confined(root: Path, parts: Sequence[str], text: str) -> Path:
    """Replace `root/parts…` with UTF-8 `text` atomically, creating missing folders; returns its path.

    Raises ConfinedPathError for a bad part, or a link (or anything not a
    folder, or not a regular file) on the way or at the target.
    """
    path = _checked(root, parts)
    with _folder(root, parts[:-1], create=True) as folder:
        name = parts[-1]
        try:
            existing = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise ConfinedPathError(f"{path}: {_kind(existing.st_mode)}, not a regular file: refused")
        tmp = temp_name_for(Path(name))
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
        os.fsync(folder)
    return path


def read_confined(root: Path, parts: Sequence[str], *, max_bytes: int = MAX_READ_BYTES) -> str:
    """The UTF-8 text of `root/parts…`; FileNotFoundError when it (or a folder on the way) is missing.

    Raises ConfinedPathError for a bad part, a link on the way or at the
    file, a file that is not regular, has more than one link, is larger than
    `max_bytes` or is not UTF-8.
    """
    path = _checked(root, parts)
    with _folder(root, parts[:-1], create=False) as folder:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            raise _open_error(exc, path, folder, parts[-1], "regular file") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ConfinedPathError(f"{path}: {_kind(info.st_mode)}, not a regular file: refused")
            if info.st_nlink != 1:
                raise ConfinedPathError(f"{path}: has {info.st_nlink} hard links: refused")
            data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ConfinedPathError(f"{path}: larger than {max_bytes} bytes: refused")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfinedPathError(f"{path}: not UTF-8 text: refused") from None


def _checked(root: Path, parts: Sequence[str]) -> Path:
    if not parts:
        raise ConfinedPathError(f"no file named under {root}")
    for part in parts:
        if part in ("", ".", "..") or "/" in part or os.sep in part or "\x00" in part:
            raise ConfinedPathError(f"not a plain file name under {root}: refused")
    return root.joinpath(*parts)


@contextlib.contextmanager
def _folder(root: Path, parts: Sequence[str], *, create: bool) -> Iterator[int]:
    """An open descriptor of `root/parts…`, each folder opened from the one above without following a link."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root, _FOLDER)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ConfinedPathError(f"{root}: a symbolic link or not a folder: refused") from None
        raise
    try:
        for depth, part in enumerate(parts, 1):
            where = root.joinpath(*parts[:depth])
            try:
                child = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    child = os.open(part, _FOLDER, dir_fd=fd)
                except OSError as exc:
                    raise _open_error(exc, where, fd, part, "folder") from None
            except OSError as exc:
                raise _open_error(exc, where, fd, part, "folder") from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_error(exc: OSError, path: Path, folder: int, name: str, expected: str) -> OSError:
    """An open refused by O_NOFOLLOW or O_DIRECTORY as a ConfinedPathError saying why; others as they are."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return exc
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        return exc
    if stat.S_ISLNK(mode):
        return ConfinedPathError(f"{path}: a symbolic link: refused, links are not followed here")
    return ConfinedPathError(f"{path}: {_kind(mode)}, not a {expected}: refused")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"
