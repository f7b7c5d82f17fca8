"""An MCP server whose read-only tools show its own environment, as some published servers' do.

- `show_settings()` returns every environment variable the server inherited, as JSON.
- `connect(token)` answers only the value of `$VAULT_ACCESS_TOKEN`, so argument synthesis
  reaches it only by feeding `show_settings`' result into it: the secret is then both a
  result and an argument of the check.
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("settings-echo")
READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


@server.tool(annotations=READ_ONLY)
def show_settings() -> str:
    """Show the settings (environment variables) this server runs with."""
    return json.dumps(dict(os.environ), sort_keys=True)


@server.tool(annotations=READ_ONLY)
def connect(vault_access_token: str) -> str:
    """Check that a vault access token is the one this server was given."""
    if vault_access_token != os.environ.get("VAULT_ACCESS_TOKEN"):
        raise ToolError("that is not this server's vault access token")
    return "token accepted"


if __name__ == "__main__":
    server.run()
