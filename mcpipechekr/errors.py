"""Errors a user can act on.

Everything raised as a ``UserError`` is printed without a traceback and ends the
command with its ``exit_code``: 2 for bad input (a file, a flag, an unreachable
server), following the convention every command documents. Anything else is a
bug in MCPipeChekr and keeps its traceback.

The two bases, ``UserError`` and ``InputError``, are defined in
``_util/user_error.py``, below the helpers of ``_util`` that raise them (a
file a user gave, the project lock); every other module names them from here.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from mcpipechekr._util.stops import (
    INTERRUPTED_EXIT,
    database_error_line,
    interrupted_line,
    is_foreseeable,
    os_error_line,
)
from mcpipechekr._util.user_error import InputError, UserError

__all__ = ["InputError", "Interrupted", "ServerHalt", "UserError", "as_user_error"]


class ServerHalt(UserError):
    """The server under test is not usable: it failed to start, died, hung or failed its health check.

    Raised so that nothing runs against a dead or stale server; the message says
    what happened and where the server's stderr was logged.
    """


class Interrupted(UserError):
    """Ctrl-C: printed as one line (what was kept) without "Error:", exit status 130."""

    exit_code = INTERRUPTED_EXIT

    def __init__(self) -> None:
        super().__init__(interrupted_line())

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


def as_user_error(error: BaseException) -> UserError | None:
    """The user error a front end reports for `error` (Ctrl-C, a refused file operation), or None."""
    if isinstance(error, UserError):
        return error
    if isinstance(error, KeyboardInterrupt):
        return Interrupted()
    if isinstance(error, OSError) and is_foreseeable(error):
        return InputError(os_error_line(error))
    if isinstance(error, sqlite3.Error) and is_foreseeable(error):
        return InputError(database_error_line(error))
    return None
