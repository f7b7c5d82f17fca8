"""A hand-written JSON-RPC stdio MCP server that reads notes only under the folder NOTES_ROOT names.

Started as `env NOTES_ROOT=/some/folder python confined_notes_server.py`, the
way a user passes a published server its setting on a `--command` line that
has no other place for environment variables. Its one tool, `read_note`
(read-only), refuses any path outside that folder, like the filesystem and
spreadsheet servers of the registries; it changes nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(os.environ["NOTES_ROOT"]).resolve()
TOOLS = [
    {
        "name": "read_note",
        "description": "Return the text of one note file under the notes folder.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The note file's path."}},
            "required": ["path"],
        },
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    }
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read_note(path: str) -> dict:
    target = Path(path).resolve()
    if ROOT != target and ROOT not in target.parents:
        return {
            "content": [{"type": "text", "text": f"Path {path!r} is outside the notes folder."}],
            "isError": True,
        }
    if not target.is_file():
        return {"content": [{"type": "text", "text": f"{path!r} is not a note file."}], "isError": True}
    return {"content": [{"type": "text", "text": target.read_text()}], "isError": False}


def handle(message: dict) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return
    params = message.get("params") or {}
    if method == "initialize":
        result: dict = {
            "protocolVersion": _version(params.get("protocolVersion")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "confined-notes", "version": "0.1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "read_note":
        result = read_note(str((params.get("arguments") or {}).get("path", "")))
    else:
        code = -32602 if method == "tools/call" else -32601
        send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": f"Unknown: {method}"}})
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
