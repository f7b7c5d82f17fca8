"""What PC-12 and PC-13 keep during one check run: the snapshots, and what each tool's calls changed.

Apart from the checks that fill it (check/honesty.py), so that `CheckContext`
can hold the watch (`ctx.honesty`) without importing the checks, which read
the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.footprint import Changes, Footprint, Snapshotter


@dataclass
class ToolWatch:
    """What the watch saw around one tool's calls."""

    changes: Changes = field(default_factory=Changes)
    windows: int = 0
    partial: bool = False
    halted: bool = False
    snapshot_ms: float = 0.0
    repeat: tuple[CheckStatus, str, dict[str, Any]] | None = None
    """PC-13's verdict, once the second call was made (or could not be)."""


@dataclass
class HonestyWatch:
    """The snapshots of one check run and what each tool's calls changed."""

    snapshotter: Snapshotter | None
    blind: str = ""
    """Why nothing is watched (a server check did not start), when `snapshotter` is None."""
    last: Footprint | None = None
    noise: set[str] = field(default_factory=set)
    """Paths the server changed on a mere tools/list: not a tool's doing."""
    tools: dict[str, ToolWatch] = field(default_factory=dict)
