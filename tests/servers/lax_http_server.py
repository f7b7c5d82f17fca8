"""A streamable HTTP MCP server that speaks just enough JSON-RPC and ignores the transport's rules.

python lax_http_server.py PORT

It issues an Mcp-Session-Id with a space in it at initialize but never looks at
it afterwards, nor at Origin, Accept or MCP-Protocol-Version; it answers a POSTed notification or response
with 200 and a body instead of 202, a GET with plain text instead of an SSE
stream or 405 (echoing the request's Authorization header, as a careless
server might), and a DELETE with 200 while the session goes on. The SDK's client
still works with it, so `check` reaches the transport checks (PC-70…PC-79),
which find each of these. Standard library only: nothing here may be fixed by a
framework.
"""

from __future__ import annotations

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    }
]


def error(message: dict[str, Any], code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}}


def answer(message: dict[str, Any]) -> dict[str, Any]:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "lax", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text")
        if not isinstance(text, str):
            result = {"content": [{"type": "text", "text": "text must be a string"}], "isError": True}
        else:
            result = {"content": [{"type": "text", "text": text}]}
    elif method == "tools/call":
        return error(message, -32602, "Unknown tool")
    elif method == "ping":
        result = {}
    else:
        return error(message, -32601, "Method not found")
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status: int, body: bytes, content_type: str, session: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if "id" not in message or "method" not in message:  # a notification or a response: 200, a body
            self.reply(200, b"{}", "application/json")
            return
        session = f"lax {uuid.uuid4().hex}" if message["method"] == "initialize" else None
        self.reply(200, json.dumps(answer(message)).encode(), "application/json", session)

    def do_GET(self) -> None:  # noqa: N802
        said = self.headers.get("Authorization", "nobody")
        self.reply(200, f"nothing to stream for {said}\n".encode(), "text/plain")

    def do_DELETE(self) -> None:  # noqa: N802
        self.reply(200, b"", "application/json")

    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
