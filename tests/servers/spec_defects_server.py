"""A stdio MCP server that breaks the protocol's lifecycle, utility and JSON-RPC rules, for PC-30…PC-49.

Hand-written newline-delimited JSON-RPC with no SDK import (like findings_server.py),
so it can do what an SDK would never let it do. It declares tools, prompts, logging
and completions, has one read-only tool (`echo`) and one prompt (`greet`, whose
`name` argument is required), and it:

- answers initialize with whatever version the client asked for, even "1999-01-01";
- refuses ping (-32601);
- declares logging but refuses logging/setLevel (-32601);
- answers an unknown method with an empty result;
- answers tools/call whose `name` is not a string as a success;
- answers a JSON-RPC batch (an array of requests) with an array of results;
- declares completions but answers completion/complete without a `completion` field;
- answers prompts/get of an unknown prompt, or without its required argument, as if all were well.

Everything else (ids echoed, malformed JSON answered -32700, cancellation, the
initialized notification) it gets right.
"""

from __future__ import annotations

import json
import sys

ECHO = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "annotations": {"readOnlyHint": True, "destructiveHint": False},
}
GREET = {
    "name": "greet",
    "description": "Greet someone by name.",
    "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
}


def answer(params: dict, method: str) -> dict:
    """The result for one request: right where the protocol is kept, wrong where this server is defective."""
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),  # defect: echoes anything
            "capabilities": {"tools": {}, "prompts": {}, "logging": {}, "completions": {}},
            "serverInfo": {"name": "spec-defects", "version": "0.1"},
        }
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": str(text)}], "isError": False}  # defect: any name
    if method == "prompts/list":
        return {"prompts": [GREET]}
    if method == "prompts/get":  # defect: any name, no argument checked
        who = (params.get("arguments") or {}).get("name", "")
        return {"messages": [{"role": "user", "content": {"type": "text", "text": f"Hello {who}"}}]}
    if method == "completion/complete":
        return {}  # defect: no `completion` field
    return {}  # defect: an unknown method answered as a success


REFUSED = {"ping", "logging/setLevel"}


def reply(message: object) -> object | None:
    """The response to one message (an array for a batch), or None for a notification."""
    if isinstance(message, list):  # defect: a batch answered since 2025-06-18 removed them
        answers = [reply(item) for item in message]
        return [item for item in answers if item is not None]
    if not isinstance(message, dict) or "id" not in message:
        return None
    method, msg_id = message.get("method"), message.get("id")
    if method in REFUSED:
        return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no {method}"}}
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    return {"jsonrpc": "2.0", "id": msg_id, "result": answer(params, str(method))}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            response: object | None = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error"},
            }
        else:
            response = reply(message)
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
