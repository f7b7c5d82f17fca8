"""The one rich console the harness prints through, so colour and width rules live in one place.

Results go to stdout and progress to stderr, which keeps `--format json` output
clean. Commands quoted in what it prints are spelled so they run from where the
user is (`_util.commands.runnable`).

Tables follow one rule, here: no cell is ever cut with an ellipsis. Without a
terminal (a pipe, CI, a log file) rich assumes 80 columns and would squeeze a
wide table into fragments (`Wils…`, `owne…`, half a bug id); there a table is
printed at its natural width instead, one line per row however long, as the
console already keeps every message on one line. At a terminal the table fits
the window, and a word longer than its column folds onto the next line. The
rule covers every `Table` printed through this console and the tables of
every `Markdown` (the Phase 2 narrative), whoever built them.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown, TableElement
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from mcpipechekr._util.commands import runnable

_UNBOUNDED = 100_000
"""A width no table reaches: measuring at it gives a table's natural width."""


class ReadableTable:
    """A table rendered under the rule in the module docstring: its natural width without a terminal,
    the window's width at one, and never an ellipsis."""

    def __init__(self, table: Table) -> None:
        self.table = _folding(table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not console.is_terminal:
            natural = Measurement.get(console, options.update_width(_UNBOUNDED), self.table).maximum
            options = options.update_width(max(options.max_width, natural))
        yield from console.render(self.table, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


def _folding(table: Table) -> Table:
    """A copy of ``table`` whose columns fold a word too long for them instead of cutting it."""
    folded = copy.copy(table)
    folded.columns = [
        dataclasses.replace(column, overflow="fold") if column.overflow in ("ellipsis", "crop") else column
        for column in table.columns
    ]
    return folded


class _ReadableTableElement(TableElement):
    """A Markdown table, rendered as a `ReadableTable`."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for rendered in super().__rich_console__(console, options):
            yield ReadableTable(rendered) if isinstance(rendered, Table) else rendered


def readable(item: Any) -> Any:
    """``item`` as this console prints it: a table (alone or in Markdown) under the rule above."""
    if isinstance(item, Table):
        return ReadableTable(item)
    if isinstance(item, Markdown) and item.elements.get("table_open") is not _ReadableTableElement:
        markdown = copy.copy(item)  # the caller's object is left as it was
        markdown.elements = {**item.elements, "table_open": _ReadableTableElement}
        return markdown
    return item


class _Console(Console):
    """A rich Console whose printed strings and texts name commands the user can run as written, and
    whose tables stay readable (the module docstring's rule)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal:
            kwargs["crop"] = False  # a table wider than 80 columns is printed whole
        super().print(*(readable(_spelled(item)) for item in objects), **kwargs)


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
