"""Definition pinning: what changed in a server's tools since the last lint.

Each lint stores every tool's full definition (name, title, description, input
and output schemas, annotations) with its hash under
`paths.home/pins/<server>.json`, and compares the next lint's tools against it:
tools added, removed, or changed (a hash differs), each change with a unified
diff of the two definitions as indented JSON. A description that quietly grows
an instruction after the user approved the server (a "rug pull") shows up here
even when no rule matches the new text.

The pins are then replaced by the current definitions, so a change is reported
by the first lint that sees it; the run's tef_report.json keeps the record.
The first lint of a server finds no pins and reports no drift.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from mcpipechekr.artifacts._base import ArtifactModel, FormatVersion
from mcpipechekr.artifacts.atomic import dumps_json, read_model, write_model
from mcpipechekr.artifacts.tef_report import Drift, ToolChange
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition


class Pins(ArtifactModel):
    """paths.home/pins/<server>.json: the tool definitions the last lint saw."""

    version: FormatVersion = 1
    server: str = Field(min_length=1)
    tools: list[ToolDefinition] = Field(default_factory=list)


def pins_path(home: Path, server: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", server) or "server"
    return Path(home) / "pins" / f"{safe}.json"


def load_pins(home: Path, server: str) -> Pins | None:
    """The stored pins, or None when there are none (or they are unreadable: then they are renewed)."""
    path = pins_path(home, server)
    if not path.exists():
        return None
    try:
        return read_model(path, Pins)
    except Exception:
        return None


def save_pins(home: Path, server: str, tools: Sequence[ToolDefinition]) -> Path:
    return write_model(pins_path(home, server), Pins(server=server, tools=list(tools)))


def _definition_text(tool: ToolDefinition) -> list[str]:
    data = tool.model_dump(mode="json", exclude={"definition_hash"})
    return dumps_json(data, sort_keys=True).decode().splitlines(keepends=True)


def diff_definitions(old: ToolDefinition, new: ToolDefinition) -> str:
    """Unified diff of two definitions of one tool, as indented JSON with sorted keys."""
    return "".join(
        difflib.unified_diff(
            _definition_text(old), _definition_text(new), f"pinned/{old.name}", f"current/{new.name}", n=2
        )
    )


def compare(previous: Sequence[ToolDefinition], current: Sequence[ToolDefinition]) -> Drift:
    """Added, removed and changed tools between two tool lists (names sorted)."""
    before = {tool.name: tool for tool in previous}
    after = {tool.name: tool for tool in current}
    changed = [
        ToolChange(tool=name, diff=diff_definitions(before[name], after[name]))
        for name in sorted(before.keys() & after.keys())
        if before[name].definition_hash != after[name].definition_hash
    ]
    return Drift(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=changed,
    )


def check_drift(home: Path, server: str, tools: Sequence[ToolDefinition], *, update: bool = True) -> Drift:
    """Drift against the stored pins (none on the first lint), then pin the current tools."""
    pins = load_pins(home, server)
    drift = compare(pins.tools, tools) if pins is not None else Drift()
    if update:
        save_pins(home, server, tools)
    return drift
