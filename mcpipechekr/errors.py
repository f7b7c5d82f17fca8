"""Errors a user can act on.

Everything raised as a ``UserError`` is printed without a traceback and ends the
command with its ``exit_code``: 2 for bad input (a file, a flag, an unreachable
server), following the convention every command documents. Anything else is a
bug in MCPipeChekr and keeps its traceback.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from mcpipechekr._util.commands import runnable
from mcpipechekr._util.stops import (
    INTERRUPTED_EXIT,
    database_error_line,
    interrupted_line,
    is_foreseeable,
    os_error_line,
)


class UserError(click.ClickException):
    """A problem in the user's input or environment, with a message that says how to fix it."""

    exit_code = 2

    def format_message(self) -> str:
        """The message as printed: the commands it names spelled so they run from where the user is."""
        return runnable(self.message)


class InputError(UserError):
    """A problem in what the user gave (a file, a flag) or in the machine under it (a full disk).

    Every command exits 2 on any user error; under doit the distinction matters,
    because doit has its own status for a step that failed (1): an InputError
    makes doit exit 2 as well, while a step that stopped (the loop waiting at
    its review) keeps doit's 1.
    """


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
