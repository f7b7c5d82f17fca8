"""The MCP SDK's streamable HTTP server in the shapes the transport checks (PC-70…PC-79) meet.

python http_spec_server.py PORT [--stateless] [--json] [--no-protection]

By default it keeps sessions, answers with SSE and refuses foreign Origin
headers (the SDK's DNS-rebinding protection for 127.0.0.1): every check passes.
--stateless issues no Mcp-Session-Id, --json answers with JSON bodies, and
--no-protection turns the Origin and Host validation off.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("--stateless", action="store_true")
parser.add_argument("--json", action="store_true")
parser.add_argument("--no-protection", action="store_true")
opts = parser.parse_args()

app = MCPServer("http-spec")


@app.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    app.run(
        "streamable-http",
        host="127.0.0.1",
        port=opts.port,
        stateless_http=opts.stateless,
        json_response=opts.json,
        transport_security=(
            TransportSecuritySettings(enable_dns_rebinding_protection=False) if opts.no_protection else None
        ),
    )
