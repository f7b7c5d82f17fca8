"""A hand-written JSON-RPC stdio MCP server whose prompts, resources and completions break the spec.

No SDK: it writes raw newline-delimited JSON-RPC, so it can send what an SDK
would refuse to. For the checks of check/spec_features.py (PC-50…PC-59):

- completion/complete answers `{}`: no `completion` (PC-50, PC-51 FAIL).
- prompts/get answers any name, and a prompt without its required argument,
  as if all were well (PC-53, PC-54 FAIL); its message has the role `system`
  (PC-52 FAIL).
- resources/read of `bad://shape` answers contents with neither text nor blob
  (PC-55 FAIL); the template `bad://item/{id}` is filled from the listed
  `bad://item/7` and reads well (PC-56 PASS).
- it declares `resources.subscribe` but answers -32601 (PC-57 FAIL).
- its one read-only tool answers `isError: "false"` (PC-58 FAIL) and an image
  whose data is not base64 (PC-59 FAIL).

--long-completion   answer completion/complete with 150 values and a string total instead
"""

from __future__ import annotations

import json
import sys

LONG_COMPLETION = "--long-completion" in sys.argv
PROMPTS = [
    {
        "name": "summarize",
        "description": "Summarize a text.",
        "arguments": [{"name": "text", "description": "The text.", "required": True}],
    }
]
RESOURCES = [
    {"uri": "bad://shape", "name": "shape", "mimeType": "text/plain"},
    {"uri": "bad://item/7", "name": "item 7", "mimeType": "text/plain"},
]
TEMPLATES = [{"uriTemplate": "bad://item/{id}", "name": "item"}]
TOOLS = [
    {
        "name": "status",
        "description": "Say how things are.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    }
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result_for(method: str, params: dict) -> dict | None:
    """The result of a request, or None for a method this server does not serve.

    Raises LookupError(code, message) for a request it refuses.
    """
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {},
                "prompts": {},
                "resources": {"subscribe": True},
                "completions": {},
            },
            "serverInfo": {"name": "features-raw", "version": "0.1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        if params.get("name") != "status":
            raise LookupError(-32602, f"Unknown tool: {params.get('name')}")
        image = {"type": "image", "data": "not base64!", "mimeType": "image/png"}
        return {"content": [{"type": "text", "text": "all well"}, image], "isError": "false"}
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "prompts/get":
        text = (params.get("arguments") or {}).get("text", "")
        return {"messages": [{"role": "system", "content": {"type": "text", "text": f"Summarize: {text}"}}]}
    if method == "resources/list":
        return {"resources": RESOURCES}
    if method == "resources/templates/list":
        return {"resourceTemplates": TEMPLATES}
    if method == "resources/read":
        uri = params.get("uri", "")
        if uri == "bad://shape":
            return {"contents": [{"uri": uri, "mimeType": "text/plain"}]}
        if not uri.startswith("bad://item/"):
            raise LookupError(-32002, f"Resource not found: {uri}")
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"the item at {uri}"}]}
    if method == "completion/complete":
        if LONG_COMPLETION:
            return {"completion": {"values": [str(n) for n in range(150)], "total": "150"}}
        return {}
    return None


def handle(message: dict) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return  # a notification: nothing to answer
    try:
        result = result_for(method, message.get("params") or {})
    except LookupError as exc:
        code, text = exc.args
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})
        return
    if result is None:
        send(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": -32601, "message": f"Method not found: {method}"},
            }
        )
    else:
        send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
