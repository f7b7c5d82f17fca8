"""Log files only their owner can read, and a pipe that redacts a child process's output into one.

A server under test prints what it likes to stderr: its environment, its
command line, a token it was handed. That output must not reach disk raw, so a
child's stderr is never the log file itself: it is the write end of a pipe
(`RedactingLog`) whose reader thread redacts each line before writing it.

Log files are opened by `open_private`: created with mode 0600, never through a
symlink (`O_NOFOLLOW`), and refused when the path is anything but a regular
file. A path someone else planted (a symlink to a file of ours, a FIFO) makes
the open fail instead of writing where they pointed.

Limits: redaction is per line, so a secret split across two lines is not
matched; a line longer than `MAX_LINE` bytes is redacted and written in pieces
of that size, and a secret straddling a piece boundary is missed.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import threading
from pathlib import Path
from types import TracebackType

from mcpipechekr._util.redact import Redactor

MAX_LINE = 1 << 20
"""Bytes held back waiting for a newline before a line is written in pieces."""

_JOIN_S = 2.0


class UnsafeLogPath(OSError):
    """A log path that is a symlink or not a regular file: something we did not make is there.

    An OSError, not a UserError, so that this module stays importable without
    click (the capture proxy starts on every attempt); callers with a user in
    front of them turn it into a UserError.
    """

    def __init__(self, path: Path, what: str):
        super().__init__(
            f"{path} {what}: refusing to write a log through it. Remove it (it was not made by "
            "mcpipechekr) and run again."
        )


def open_private(path: Path, *, append: bool = True) -> int:
    """A write descriptor for `path`, created 0600, never through a symlink; a non-regular file is refused.

    `append` keeps what is there (a restarted server's log continues its
    first start's); otherwise the file is truncated.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: how BSDs report O_NOFOLLOW on a link
            raise UnsafeLogPath(path, "is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeLogPath(path, "is not a regular file")
        os.set_blocking(fd, True)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)  # an older log of ours, written before logs were private
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` as a private file (see `open_private`), replacing what was there."""
    fd = open_private(path, append=False)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


class RedactingLog:
    """A pipe to hand a child process as its stderr; what comes through is redacted into `path`.

    Use as a context manager: entering opens the log and starts the reader
    thread, leaving closes our write end and waits (a short while) for the
    reader to write the rest. `fileno()` is the write end, for `Popen` and
    `anyio.open_process`. `offset` is the log's size when it was opened, so a
    message can quote only this start's lines. `flush()` waits until what the
    child wrote so far is in the file, for a message that quotes it.
    """

    def __init__(self, path: Path, redactor: Redactor, *, append: bool = True):
        self.path = path
        self.redactor = redactor
        self._append = append
        self._file_fd = -1
        self._read_fd = -1
        self._write_fd = -1
        self.offset = 0
        self._pending = b""
        self._busy = False
        self._done = False
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RedactingLog:
        self._file_fd = open_private(self.path, append=self._append)
        self.offset = os.fstat(self._file_fd).st_size
        self._read_fd, self._write_fd = os.pipe()
        self._thread = threading.Thread(target=self._pump, name="redacting-log", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def fileno(self) -> int:
        """The pipe's write end: what the child's stderr is set to."""
        return self._write_fd

    def close(self) -> None:
        """Close our write end; once every child has exited too, the reader writes the rest and ends."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1
        if self._thread is not None:
            self._thread.join(_JOIN_S)
            if self._thread.is_alive():
                return  # a grandchild still holds the pipe: the daemon thread closes the files when it ends
        self._close_files()

    def flush(self, timeout_s: float = 1.0) -> None:
        """Wait (up to `timeout_s`) until everything written to the pipe so far is redacted into the file.

        A line still waiting for its newline is written as it is: the caller is
        about to quote the log, typically because the child died mid-line.
        """
        with self._lock:
            drained = self._lock.wait_for(self._drained, timeout_s)
            if drained and self._pending:
                self._write(self._pending)
                self._pending = b""

    def _drained(self) -> bool:
        """The reader ended, or it is idle with nothing left in the pipe (the caller holds the lock)."""
        return self._done or not (self._busy or select.select([self._read_fd], [], [], 0)[0])

    def _pump(self) -> None:
        try:
            while True:
                select.select([self._read_fd], [], [])
                with self._lock:
                    self._busy = True
                chunk = os.read(self._read_fd, 65536)
                with self._lock:
                    if not chunk:
                        if self._pending:
                            self._write(self._pending)
                            self._pending = b""
                        return
                    self._take(chunk)
                    self._busy = False
                    self._lock.notify_all()
        except OSError:
            return
        finally:
            with self._lock:
                self._done = True
                self._busy = False
                self._lock.notify_all()
            if self._write_fd < 0:
                self._close_files()

    def _take(self, chunk: bytes) -> None:
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) >= MAX_LINE:
            cut = len(data)
        self._pending = data[cut:]
        if cut:
            self._write(data[:cut])

    def _write(self, data: bytes) -> None:
        text = data.decode("utf-8", errors="surrogateescape")
        out = self.redactor.redact(text).encode("utf-8", errors="surrogateescape")
        while out:
            written = os.write(self._file_fd, out)
            out = out[written:]

    def _close_files(self) -> None:
        with self._lock:
            for name in ("_read_fd", "_file_fd"):
                fd = getattr(self, name)
                if fd >= 0:
                    setattr(self, name, -1)
                    os.close(fd)
