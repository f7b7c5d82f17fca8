"""Errors a user can act on.

Everything raised as a ``UserError`` is printed without a traceback and ends the
command with its ``exit_code``: 2 for bad input (a file, a flag, an unreachable
server), following the convention every command documents. Anything else is a
bug in MCPipeChekr and keeps its traceback.
"""

from __future__ import annotations

import click

from mcpipechekr._util.commands import runnable


class UserError(click.ClickException):
    """A problem in the user's input or environment, with a message that says how to fix it."""

    exit_code = 2

    def format_message(self) -> str:
        """The message as printed: the commands it names spelled so they run from where the user is."""
        return runnable(self.message)


class ServerHalt(UserError):
    """The server under test is not usable: it failed to start, died, hung or failed its health check.

    Raised so that nothing runs against a dead or stale server; the message says
    what happened and where the server's stderr was logged.
    """
