"""Every file the project writes is its owner's alone: 0600 files, 0700 folders.

Run folders hold traces, journals and logs with what the server and the agents said, and the
findings home the call records of real use: none of it is for the other users of the machine. A
process umask of 077, set where each process of ours starts (the CLI, doit's dodo module, the
capture proxy), makes every file and folder it or its children create private, whichever writer
creates it (an atomic write, a journal, a log, a folder made on the way); writers that name a
mode name 0600 too, for callers that use the library without those entry points.
"""

from __future__ import annotations

import os

PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
FOLDER_MODE = 0o700


def private_by_default() -> None:
    """Make what this process (and every process it starts) creates from now on private."""
    os.umask(PRIVATE_UMASK)
