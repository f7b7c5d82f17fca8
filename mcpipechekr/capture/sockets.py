"""Where a unix socket of ours lives: a private folder whose path leaves room for the socket's name.

A unix socket's path is limited (108 bytes on Linux, 104 on macOS), and a deep `$TMPDIR` (macOS's,
a test's) leaves too little of it; the folder then goes to /tmp. The warm pool's sockets and the
secrets desk's both live in one.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

MAX_SOCKET_PATH = 100
"""Bytes a unix socket's path may have, with a margin under the smallest limit."""


def socket_folder(prefix: str, *, name: str) -> Path:
    """A private (0700) folder for sockets named like `name` at the longest: in the temp folder, or
    in /tmp when the temp folder's path is too long for a socket path."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if len(str(folder / name).encode()) <= MAX_SOCKET_PATH or not Path("/tmp").is_dir():
        return folder
    folder.rmdir()
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
