"""Reading a text file a user gave (config.yaml, tasks.yaml, `.env`, …) without trusting what it is.

A path the user names may hold anything: a symbolic link that leads back to
itself, a FIFO (reading it waits for a writer forever), a device (`/dev/zero`
never ends), a directory, or a regular file far larger than any real input
(parsing 20 MB of YAML takes most of a minute and a gigabyte). So the reader:

- `stat`s the path first, following links: a loop (`ELOOP`) is refused with
  its name, and anything but a regular file is refused by its type before
  it is opened;
- opens it non-blocking, so a FIFO swapped in after the check cannot stall
  the open, and checks the type again on the open descriptor;
- reads at most `MAX_INPUT_BYTES` plus one byte, so a file that grows (or
  lies about its size) is bounded too; a larger file is refused with its
  size, the limit, and the line where the limit falls;
- refuses a NUL byte (no text format we read allows one, and a later reader
  would fail without a line) and bytes that are not UTF-8, each at its line
  and column.

`UnreadableFile` carries the line and column apart from the message, so
callers that collect problems (`yamlsrc.read_text_file`) can place it like
their own. `resolved` is `Path.resolve` that survives a link loop (Python
3.11 raises `RuntimeError` there): the loop is then reported by the read.
`resolved_file` resolves only a file's folder, so a message about a link
(`tasks.yaml` pointing at `/dev/zero`) names the link the user knows.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from mcpipechekr._util.user_error import InputError

MAX_INPUT_BYTES = 5 * 1024 * 1024
"""The largest file a user gives that MCPipeChekr reads (5 MiB); real config and task files are a few KiB."""

_CHUNK = 1 << 16


class UnreadableFile(InputError):
    """A file that is not a bounded, regular UTF-8 text file without NUL bytes; `line`, `column` if known."""

    def __init__(self, shown: str, message: str, line: int | None = None, column: int | None = None):
        self.shown = shown
        self.problem = message
        self.line = line
        self.column = column
        where = (
            shown + (f":{line}" if line is not None else "") + (f":{column}" if column is not None else "")
        )
        super().__init__(f"{where}: {message}")


def resolved(path: str | Path) -> Path:
    """`path` made absolute with its links resolved; only made absolute when a link loops."""
    path = Path(path)
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def resolved_file(path: str | Path) -> Path:
    """`path` absolute with its folder's links resolved but not its own: a link keeps its name in messages."""
    path = Path(os.path.abspath(path))
    if path.name in ("", ".", ".."):
        return resolved(path)
    return resolved(path.parent) / path.name


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words: 'a directory', 'a FIFO (named pipe)', …"""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def size_text(size: int) -> str:
    """`20971520` -> `20.0 MiB`."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}".removesuffix(".0") + " KiB"
    return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MiB"


def read_user_text(
    path: str | Path, *, what: str = "file", shown: str | None = None, limit: int = MAX_INPUT_BYTES
) -> str:
    """The file at `path` as text, or UnreadableFile saying why not (see the module docstring).

    `what` names the file's role in messages ("task file"); `shown` is its
    name as the user knows it (the path as given by default).
    """
    shown = str(path) if shown is None else shown
    raw = _read_bounded(Path(path), what, shown, limit)
    nul = raw.find(b"\0")
    if nul >= 0:
        line, column = _position(raw, nul)
        raise UnreadableFile(shown, f"{what} holds a NUL byte: remove it", line, column)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(raw, exc.start)
        raise UnreadableFile(
            shown, f"{what} is not UTF-8 text (byte 0x{raw[exc.start]:02x}): save it as UTF-8", line, column
        ) from None


def _read_bounded(path: Path, what: str, shown: str, limit: int) -> bytes:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(shown, f"{what} is {file_kind(info.st_mode)}, not a regular file: refused")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnreadableFile(shown, f"{what} not found") from None
    except OSError as exc:
        raise UnreadableFile(shown, _os_problem(exc, what)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped between the check and the open
            raise UnreadableFile(shown, f"{what} is {file_kind(info.st_mode)}, not a regular file: refused")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        size = max(total, os.fstat(fd).st_size)
    except OSError as exc:
        raise UnreadableFile(shown, _os_problem(exc, what)) from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if total > limit:
        line = raw.count(b"\n", 0, limit) + 1
        raise UnreadableFile(
            shown,
            f"{what} is {size_text(size)}, over the {size_text(limit)} limit for input files "
            f"(reached at line {line}): split it or remove what it does not need",
        )
    return raw


def _os_problem(exc: OSError, what: str) -> str:
    if exc.errno == errno.ELOOP:
        return f"{what} is a symbolic link that loops (it leads back to itself): point it at a file"
    return f"cannot read {what}: {exc.strerror or exc}"


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """(line, column) of byte `offset`, both from 1."""
    return raw.count(b"\n", 0, offset) + 1, offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
