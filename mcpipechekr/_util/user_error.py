"""The base of the errors a user can act on, below the helpers that raise them.

Reading a file a user gave (`safe_read`, `yamlsrc`) and taking the project
lock (`project_lock`) end in errors the user can act on, so their error
classes derive from these; and `mcpipechekr.errors`, which words Ctrl-C and a
refused file operation (`stops`), builds on this package. The two bases live
here, and `mcpipechekr.errors` names them with the rest, so neither package
imports the other back.
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


class InputError(UserError):
    """A problem in what the user gave (a file, a flag) or in the machine under it (a full disk).

    Every command exits 2 on any user error; under doit the distinction matters,
    because doit has its own status for a step that failed (1): an InputError
    makes doit exit 2 as well, while a step that stopped (the loop waiting at
    its review) keeps doit's 1.
    """
