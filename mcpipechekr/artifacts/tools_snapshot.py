"""tools.json: the server's tool definitions as a run saw them.

Why a snapshot: every later phase is judged against the tools the agent was
shown, and a fix changes them. Pinning each definition by hash lets lint report
drift between runs and lets the build graph tell when the server changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import AwareDatetime, Field

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion, Sha256, utc_now


class ToolDefinition(ArtifactModel):
    """One tool exactly as tools/list described it."""

    name: str = Field(min_length=1, description="The tool's name.")
    title: str | None = Field(default=None, description="Human-readable title, if the server gives one.")
    description: str | None = Field(default=None, description="The description the agent reads.")
    input_schema: dict[str, Any] = Field(description="JSON Schema of the arguments.")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema of structured results, if declared."
    )
    annotations: dict[str, Any] | None = Field(
        default=None, description="Behaviour hints (readOnlyHint, destructiveHint, …), if declared."
    )
    definition_hash: Sha256 = Field(
        description="Hash of name, title, description, schemas and annotations: any change changes it."
    )


class ToolsSnapshot(ArtifactModel):
    """runs/{run-id}/tools.json: the tool list the server offered during the run."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    server: str = Field(min_length=1, description="The server's short name from config.yaml.")
    taken_at: AwareDatetime = Field(description="When tools/list was read.")
    protocol_version: str | None = Field(default=None, description="MCP protocol version negotiated.")
    server_info: dict[str, Any] = Field(
        default_factory=dict, description="The server's self-description from the handshake."
    )
    tools: list[ToolDefinition] = Field(description="Every tool, in the order the server listed them.")
    tools_hash: Sha256 = Field(
        description="Hash over every definition hash: equal iff the tool list is equal."
    )


def tool_definition(tool: Any) -> ToolDefinition:
    """Build a definition (with its hash) from an `mcp_types.Tool` or an equivalent dict."""
    raw = tool if isinstance(tool, dict) else tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    fields = {
        "name": raw["name"],
        "title": raw.get("title"),
        "description": raw.get("description"),
        "input_schema": raw.get("inputSchema", raw.get("input_schema")) or {},
        "output_schema": raw.get("outputSchema", raw.get("output_schema")),
        "annotations": raw.get("annotations"),
    }
    return ToolDefinition(**fields, definition_hash=sha256_json(fields))


def snapshot_tools(
    server: str,
    tools: list[Any],
    *,
    protocol_version: str | None = None,
    server_info: dict[str, Any] | None = None,
) -> ToolsSnapshot:
    """Snapshot a tools/list answer; the overall hash ignores when it was taken."""
    definitions = [tool_definition(tool) for tool in tools]
    return ToolsSnapshot(
        server=server,
        taken_at=utc_now(),
        protocol_version=protocol_version,
        server_info=server_info or {},
        tools=definitions,
        tools_hash=sha256_json([d.definition_hash for d in definitions]),
    )
