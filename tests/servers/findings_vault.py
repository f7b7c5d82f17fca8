"""An MCP server whose errors echo what the caller sent, for the findings sanitization tests.

- `unlock(account, token)`: always refuses, and its error text repeats the token
  and the account, the way careless servers do (a secret would end up in any
  store that kept error texts).
- `balance(account)`: crashes (an unhandled exception the SDK turns into
  `Error executing tool balance`).
- `ping()`: answers `pong`.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("vault", log_level="WARNING")


@app.tool(description="Unlock an account with a token.")
def unlock(account: str, token: str) -> str:
    raise ToolError(f"permission denied: token {token} is not valid for account {account}")


@app.tool(description="The balance of an account.")
def balance(account: str) -> str:
    raise RuntimeError(f"database row for {account} is corrupt")


@app.tool(description="Liveness check.")
def ping() -> str:
    return "pong"


if __name__ == "__main__":
    app.run()
