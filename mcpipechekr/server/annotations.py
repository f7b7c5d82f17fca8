"""Whether a tool says it only reads: the one rule for calling a tool nobody asked us to call.

`check` probes tools and `baseline` replays reference calls without a person
watching each call, so both call a tool on their own only when its annotations
promise no change: `readOnlyHint: true` and not `destructiveHint: true`. A
missing hint takes the MCP specification's default (readOnlyHint false,
destructiveHint true), so a tool without annotations counts as one that may
change state, whatever its name says. Names are never read here: `list_all`
may delete and `wipe_all_notes` may only read, and guessing either way calls
the wrong tool sooner or later.

Most published servers annotate nothing, so the author of the server can say
which tools only read: `check.read_only` in config.yaml, or `check
--trust-read-only TOOL` (check/trust.py). Such a trusted tool counts as
annotated `readOnlyHint: true`, unless its annotations say it writes
(`destructiveHint: true` or `readOnlyHint: false`): what the server itself
declares wins over what anyone believes about it.
"""

from __future__ import annotations

import mcp_types

MCP_DEFAULTS = "the MCP defaults for missing hints are readOnlyHint: false and destructiveHint: true"


def write_risk(tool: mcp_types.Tool, *, trusted: bool = False) -> str | None:
    """None when the tool is annotated read-only and not destructive; else why it may change state.

    `trusted`: the server's author said it only reads (check.read_only); it then
    counts as `readOnlyHint: true` unless `annotated_writes` says otherwise.
    """
    if trusted and (declared := annotated_writes(tool)) is not None:
        return f"{declared}, which wins over check.read_only"
    if trusted:
        return None
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


def annotated_writes(tool: mcp_types.Tool) -> str | None:
    """Why the tool's own annotations say it changes state (destructive, or readOnlyHint: false); else None.

    Only hints the server wrote count here, not the MCP defaults: this is what
    refuses an author's trust in a tool (check.read_only), and a tool that
    declares nothing is exactly the one that trust is for.
    """
    annotations = tool.annotations
    if annotations is None:
        return None
    if annotations.destructive_hint is True:
        return "it is annotated destructiveHint: true"
    if annotations.read_only_hint is False:
        return "it is annotated readOnlyHint: false"
    return None
