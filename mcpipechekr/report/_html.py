"""HTML fragments built safely: every value from a run is escaped where it is put into the page.

Traces, tool results, tool descriptions and bug texts come from the server
under test and from models: hostile input (docs/security.md). So nothing from
them reaches the page unescaped: `esc` for text, `attrs` for attribute values,
and the page carries no data for its script to parse, only markup its script
shows or hides. A fragment is a plain `str` of markup; whoever builds one from a
value escapes the value there.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

MAX_SHOWN_CHARS = 20_000
"""A text longer than this (a huge tool result) is cut in the page, saying how much was left out."""

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def esc(value: object) -> str:
    """Text safe inside an element or a quoted attribute: `<`, `>`, `&` and both quotes escaped."""
    return html.escape("" if value is None else str(value), quote=True)


def attrs(**values: object) -> str:
    """` name="value"` pairs, escaped; `data_task` becomes `data-task`; None and False are left out."""
    parts = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return "".join(parts)


def tag(name: str, body: str = "", **values: object) -> str:
    """`<name attrs>body</name>`: `body` is markup already (escape text with `esc` first)."""
    return f"<{name}{attrs(**values)}>{body}</{name}>"


def text(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """Escaped text, cut at `limit` characters with a note of how many were left out."""
    shown = "" if value is None else str(value)
    if len(shown) <= limit:
        return esc(shown)
    left = len(shown) - limit
    return esc(shown[:limit]) + tag(
        "span", esc(f"… {left:,} more characters (see the trace file)"), class_="cut"
    )


def pretty_json(value: Any) -> str:
    """A JSON value indented for reading (escaped, cut like `text`)."""
    return text(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def dom_id(*parts: str) -> str:
    """An element id from parts (run id, trace name, step): only letters, digits, `_`, `.`, `-`."""
    return "-".join(_ID_UNSAFE.sub("_", part) for part in parts)


def number(value: float | int | None) -> str:
    """A count or a mean for a table cell: thousands separated, `-` for none."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value) == int(value) or abs(value) >= 10 else f"{value:,.1f}"
