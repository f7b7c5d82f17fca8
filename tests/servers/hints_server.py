"""A hand-written JSON-RPC stdio MCP server whose tools declare every mix of annotations, for PC-04/PC-05.

No SDK: an SDK refuses to list one name twice, and this server does. Its tools:

- `find`: readOnlyHint true and nothing else (a read-only tool need not say more).
- `find` again: a second definition of the same name, with no description, no
  annotations and a required argument, so a check that judged it would say so.
- `count`: all four hints.
- `save`: readOnlyHint false, destructiveHint false, no idempotentHint.
- `tag`: annotations with a title only (readOnlyHint's default, false, applies).
- `merge`: no readOnlyHint, but destructiveHint and idempotentHint both given.
- `erase`: no annotations at all.
- `peek`: readOnlyHint true and destructiveHint true (the second means nothing beside the first).

Every call answers "ok"; none changes anything.
"""

from __future__ import annotations

import json
import sys


def _tool(name: str, annotations: dict | None, description: str | None = "Does one thing.", **schema):
    tool: dict = {"name": name, "inputSchema": {"type": "object", "properties": {}, **schema}}
    if description is not None:
        tool["description"] = description
    if annotations is not None:
        tool["annotations"] = annotations
    return tool


TOOLS = [
    _tool("find", {"readOnlyHint": True}),
    _tool(
        "count",
        {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    ),
    _tool("save", {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}),
    _tool("tag", {"title": "Tag"}),
    _tool("merge", {"destructiveHint": False, "idempotentHint": True, "openWorldHint": False}),
    _tool("erase", None),
    _tool(
        "peek",
        {"readOnlyHint": True, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
    ),
    _tool("find", None, None, properties={"q": {"type": "string"}}, required=["q"]),
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(message: dict) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return  # a notification: nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        result: dict = {
            "protocolVersion": _version(params.get("protocolVersion")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hints", "version": "0.1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") in {tool["name"] for tool in TOOLS}:
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": "Unknown tool"}})
        return
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": -32601, "message": f"Method not found: {method}"},
            }
        )
        return
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _version(requested: object) -> str:
    """The version asked for when supported, else the latest supported (the lifecycle's negotiation)."""
    return requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[-1]  # type: ignore[return-value]


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not JSON: ignored
            if isinstance(message, dict):  # a batch (an array) is ignored: removed in 2025-06-18
                handle(message)


if __name__ == "__main__":
    main()
