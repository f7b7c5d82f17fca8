"""A hand-written JSON-RPC stdio MCP server whose tools fail in every way a call record must capture.

No SDK, so it can answer what an SDK never would (a result that is not an
object, a string `isError`). Deterministic: the same input lines always give
the same output lines, so a test can compare the proxied answers with direct ones.

Tools:
- `lookup {id}`: id "1" → ok; any other id → `isError` with the id in the text and
  `structuredContent.error = {code: NOT_FOUND, retryable: false}`;
- `locked {}`: a JSON-RPC error -32603 whose `data.retryable` is true;
- `login {password}`: a tool error that repeats the password (a secret that must never be stored);
- `bad_result {}`: `result` is a string; `bad_flag {}`: `isError` is the string "yes";
- `die {}`: the process exits with code 7 before answering.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("lookup", "locked", "login", "bad_result", "bad_flag", "die")
]


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def call(name: str, arguments: dict) -> dict:
    """The JSON-RPC response body (without id) for one tools/call."""
    if name == "lookup":
        if str(arguments.get("id")) == "1":
            return {"result": {"content": text("mail 1: hello")}}
        return {
            "result": {
                "content": text(f"mail '{arguments.get('id')}' not found"),
                "structuredContent": {"error": {"code": "NOT_FOUND", "retryable": False}},
                "isError": True,
            }
        }
    if name == "locked":
        return {"error": {"code": -32603, "message": "database is locked", "data": {"retryable": True}}}
    if name == "login":
        return {"result": {"content": text(f"wrong password {arguments.get('password')}"), "isError": True}}
    if name == "bad_result":
        return {"result": "oops"}
    if name == "bad_flag":
        return {"result": {"content": text("maybe"), "isError": "yes"}}
    if name == "die":
        sys.exit(7)
    return {"error": {"code": -32602, "message": f"Unknown tool: {name}"}}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            body: dict = {
                "result": {
                    "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "findings-raw", "version": "1"},
                }
            }
        elif method == "tools/list":
            body = {"result": {"tools": TOOLS}}
        elif method == "tools/call":
            params = message.get("params") or {}
            body = call(params.get("name", ""), params.get("arguments") or {})
        else:
            body = {"error": {"code": -32601, "message": "Method not found"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **body}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
