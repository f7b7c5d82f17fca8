"""The project doit works in: its state folder, doit's dependency file and the project's lock.

One process at a time: two doit invocations in one project would race for run
folders and the server, so an invocation that may change things holds the lock.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from mcpipechekr._util import project_lock
from mcpipechekr._util.console import console, err_console
from mcpipechekr.errors import UserError, as_user_error
from mcpipechekr.graph.flags import _preparing, current_settings
from mcpipechekr.graph.reporter import _interrupted_anywhere
from mcpipechekr.server import kept as kept_servers

STATE_DIR = Path(".mcpipechekr")
DEP_FILE = str(STATE_DIR / "doit.sqlite")


def open_project() -> None:
    """Ready the project folder (the working directory) for doit: its state folder, and the lock.

    doit opens its dependency file in the state folder before any task runs, even for `list`.
    """
    sys.excepthook = _interrupted_anywhere
    kept_servers.keep_until_exit()  # one start of the server for the steps of this doit run
    try:
        STATE_DIR.mkdir(exist_ok=True)
        hold_project_lock()
        _open_dep_file()
    except (OSError, UserError) as exc:
        error = as_user_error(exc)
        if error is None:
            raise
        console.print(f"[bold red]error:[/] {error.format_message()}", markup=True, soft_wrap=True)
        raise SystemExit(UserError.exit_code) from None


def _open_dep_file() -> None:
    """Make sure doit can write its dependency file, which it opens before any task runs.

    doit reports a file it cannot create (a full disk, a read-only folder) as a
    corrupt one, with a traceback and status 3; this says what is wrong instead.
    """
    try:
        connection = sqlite3.connect(DEP_FILE)
        try:
            connection.execute(
                "create table if not exists doit (task_id text not null primary key, task_data json)"
            )
            connection.commit()
        finally:
            connection.close()
    except sqlite3.OperationalError as exc:
        raise UserError(
            f"cannot write doit's dependency file {DEP_FILE}: {exc}; is the disk full, "
            "or the folder read-only?"
        ) from None


def project_folder() -> Path:
    """The project this invocation works on: the folder of its config file, the one `mcpipechekr` commands
    given the same config lock too."""
    return Path(current_settings().config).parent


def hold_project_lock() -> None:
    """Take the project's lock (`_util/project_lock.py`) until this process ends, unless only reading.

    Reentrant: the loop's nested invocations run in this process and share it.
    """
    if _preparing():
        _hold(project_folder())


def _hold(project: Path) -> None:
    try:
        project_lock.hold_project_lock(project)
    except UserError as exc:  # doit imports dodo.py outside any click command: print it as click would
        err_console.print(f"error: {exc.format_message()}", markup=False)
        raise SystemExit(exc.exit_code) from None


# ---------------------------------------------------------------------------------------------------------
# Actions: thin wrappers that print a user error as a message instead of a traceback, and fail the task
