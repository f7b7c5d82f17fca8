"""A hand-written JSON-RPC stdio MCP server with the quirks of servers published in the registries.

No SDK, so it can answer the way older or hand-rolled servers do:

- it declares the resources capability and answers resources/list and
  resources/read, but not resources/templates/list (-32601 Method not found),
  as a low-level server that registered no template handler does;
- `lookup_package` (read-only, openWorldHint true) reports that it could not
  reach its host in an ordinary result, without isError: "Error searching
  packages: TypeError: fetch failed";
- `weather_report` (read-only, openWorldHint true) answers a real report that
  happens to mention a timeout and a failed connection in a long text: a
  success, not a network error;
- `shelf_status` (read-only, closed world) answers "ok".

The descriptions are for lint: `lookup_package` tells the agent NOT to put
secrets in its query (a safety note, not a request for secrets) and
`weather_report` names its camelCase parameter `maxDays` as `max_days`, and
`list_shelves` tells the agent to call again with `next_cursor`, a field of its
own outputSchema. Nothing changes state.
"""

from __future__ import annotations

import json
import sys

READ_ONLY_OPEN = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}
TOOLS = [
    {
        "name": "lookup_package",
        "description": (
            "Look up a package in the public registry by name and return its latest version. "
            "Do not include any API keys, passwords or other credentials in your query."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The package name, e.g. 'left-pad'."}},
            "required": ["name"],
        },
        "annotations": READ_ONLY_OPEN,
    },
    {
        "name": "weather_report",
        "description": (
            "Return the weather report of a city for the next days. Give max_days to bound the "
            "number of days (7 at most)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. 'Lyon'."},
                "maxDays": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
        "annotations": READ_ONLY_OPEN,
    },
    {
        "name": "shelf_status",
        "description": "Return how full each shelf of the local store is.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    },
]
TOOLS.append(
    {
        "name": "list_shelves",
        "description": (
            "List the store's shelves, one page at a time. If `next_cursor` is present, call again "
            "with it as `cursor`."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"cursor": {"type": "string", "description": "Where the page starts."}},
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "shelves": {"type": "array", "items": {"type": "string"}},
                "next_cursor": {"type": "string"},
            },
            "required": ["shelves"],
        },
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    }
)
RESOURCES = [{"uri": "shelf://main", "name": "main shelf", "mimeType": "text/plain"}]
WEATHER = (
    "Lyon, next 3 days: sunny, 24 C; cloudy, 19 C; rain, 15 C. "
    "Advisory: the regional rail link timed out twice yesterday after a failed connection between "
    "signal boxes; services run with delays. "
) * 4


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def error(msg_id: object, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def call(name: str) -> dict:
    if name == "list_shelves":
        shelves = {"shelves": ["main"]}
        return {"content": [{"type": "text", "text": json.dumps(shelves)}], "structuredContent": shelves}
    text = {
        "lookup_package": "Error searching packages: TypeError: fetch failed",
        "weather_report": WEATHER,
        "shelf_status": "main: 40% full",
    }[name]
    return {"content": [{"type": "text", "text": text}], "isError": False}


def handle(message: dict) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return  # a notification: nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        result: dict = {
            "protocolVersion": _version(params.get("protocolVersion")),
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "quirks", "version": "0.1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") in {tool["name"] for tool in TOOLS}:
        result = call(params["name"])
    elif method == "tools/call":
        return error(msg_id, -32602, f"Unknown tool: {params.get('name')}")
    elif method == "resources/list":
        result = {"resources": RESOURCES}
    elif method == "resources/read" and params.get("uri") == "shelf://main":
        result = {"contents": [{"uri": "shelf://main", "mimeType": "text/plain", "text": "40% full"}]}
    elif method == "resources/read":
        return error(msg_id, -32002, f"Resource not found: {params.get('uri')}")
    else:
        return error(msg_id, -32601, "Method not found")
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
