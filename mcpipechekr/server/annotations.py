"""Whether a tool says it only reads: the one rule for calling a tool nobody asked us to call.

`check` probes tools and `baseline` replays reference calls without a person
watching each call, so both call a tool on their own only when its annotations
promise no change: `readOnlyHint: true` and not `destructiveHint: true`. A
missing hint takes the MCP specification's default (readOnlyHint false,
destructiveHint true), so a tool without annotations counts as one that may
change state, whatever its name says. Names are never read here: `list_all`
may delete and `wipe_all_notes` may only read, and guessing either way calls
the wrong tool sooner or later.
"""

from __future__ import annotations

import mcp_types

MCP_DEFAULTS = "the MCP defaults for missing hints are readOnlyHint: false and destructiveHint: true"


def write_risk(tool: mcp_types.Tool) -> str | None:
    """None when the tool is annotated read-only and not destructive; else why it may change state."""
    annotations = tool.annotations
    if annotations is None:
        return f"it declares no annotations ({MCP_DEFAULTS})"
    if annotations.destructive_hint is True:
        return "it is annotated destructiveHint: true"
    if annotations.read_only_hint is False:
        return "it is annotated readOnlyHint: false"
    if annotations.read_only_hint is None:
        return f"its annotations leave out readOnlyHint ({MCP_DEFAULTS})"
    return None
