"""The one rich console the harness prints through, so colour and width rules live in one place.

Results go to stdout and progress to stderr, which keeps `--format json` output
clean. Commands quoted in what it prints are spelled so they run from where the
user is (`_util.commands.runnable`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from mcpipechekr._util.commands import runnable


class _Console(Console):
    """A rich Console whose printed strings and texts name commands the user can run as written."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(_spelled(item) for item in objects), **kwargs)


def _spelled(item: Any) -> Any:
    if isinstance(item, str):
        return runnable(item)
    if isinstance(item, Text):
        plain = runnable(item.plain)
        if plain != item.plain:
            return Text(plain, style=item.style)
    return item


# soft_wrap: messages are never broken mid-line, so logs and pipes keep one message per line.
console = _Console(highlight=False, soft_wrap=True)
err_console = _Console(stderr=True, highlight=False, soft_wrap=True)
