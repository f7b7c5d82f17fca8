"""A stdio MCP server whose defects are switched by environment variables, for findings tests.

Hand-written newline-delimited JSON-RPC with no SDK import, so it starts in a
few milliseconds: verification tests start it many times. Its tools:

- `lookup(key)`: answers `{"key": key, "found": true}`; with FINDINGS_BROKEN=1 it answers
  a tool error (what an unhandled exception looks like to a client); with
  FINDINGS_FAIL_EVERY=N every Nth call in the process fails (a flaky failure).
- `save(note)`: answers `{"saved": true}`; with FINDINGS_BROKEN=1 it answers
  `{"saved": false}` without an error (what a false success looks like to a check).
- `touch(text)`: appends to the file given by --scratch, a regular file passed as an
  argument, so the server's files change during a call.

Every tool is annotated read-only, so a verification may call it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False}


def _tool(name: str, description: str, argument: str) -> dict:
    schema = {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}
    return {"name": name, "description": description, "inputSchema": schema, "annotations": READ_ONLY}


TOOLS = [
    _tool("lookup", "Look a key up.", "key"),
    _tool("save", "Save a note.", "note"),
    _tool("touch", "Append a line to the scratch file.", "text"),
]
calls = {"lookup": 0}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(structured: dict | None, text: str, *, is_error: bool = False) -> dict:
    answer: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        answer["structuredContent"] = structured
    return answer


def call_tool(params: dict, scratch: Path | None) -> dict:
    name, args = params.get("name"), params.get("arguments") or {}
    broken = os.environ.get("FINDINGS_BROKEN") == "1"
    if name == "lookup":
        calls["lookup"] += 1
        every = int(os.environ.get("FINDINGS_FAIL_EVERY", "0"))
        if broken or (every and calls["lookup"] % every == 0):
            return result(
                None, f"Traceback (most recent call last): KeyError: {args.get('key')!r}", is_error=True
            )
        return result({"key": args.get("key"), "found": True}, json.dumps({"found": True}))
    if name == "save":
        return result({"saved": not broken}, json.dumps({"saved": not broken}))
    if name == "touch":
        if scratch is not None:
            with open(scratch, "a", encoding="utf-8") as handle:
                handle.write(f"{args.get('text')}\n")
        return result(None, "touched")
    raise LookupError(f"Unknown tool: {name}")


def handle(message: dict, scratch: Path | None) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return  # a notification: nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        answer = {
            "protocolVersion": _version(params.get("protocolVersion")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "findings", "version": "0.1"},
        }
    elif method == "ping":
        answer = {}
    elif method == "tools/list":
        answer = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            answer = call_tool(params, scratch)
        except LookupError as exc:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": str(exc)}})
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
    send({"jsonrpc": "2.0", "id": msg_id, "result": answer})


SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _version(requested: object) -> str:
    """The version asked for when supported, else the latest supported (the lifecycle's negotiation)."""
    return requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[-1]  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", type=Path)
    opts = parser.parse_args()
    for line in sys.stdin:
        if line.strip():
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not JSON: ignored
            if isinstance(message, dict):  # a batch (an array) is ignored: removed in 2025-06-18
                handle(message, opts.scratch)


if __name__ == "__main__":
    main()
