"""A hand-written JSON-RPC stdio MCP server that misbehaves on purpose, for `check` tests.

No SDK: it writes raw newline-delimited JSON-RPC, so it can send what an SDK
would refuse to. It speaks the initialize handshake and answers -32601 to any
method it does not know (`server/discover` included), so a client falls back
to the handshake. Its tools:

- `echo`: well-behaved; `text` is required, a missing or non-string `text` is a tool error.
- `crash_on_bad`: exits with code 3 when `count` is not an integer (a crash on bad input).
- `malformed`: answers with a text content block whose `text` is a number.
- `hang`: never answers.
- `bad_schema`: declares an inputSchema that is not a valid JSON Schema.
- `bad_structured`: declares an outputSchema and answers structuredContent that does not match it.

Every tool is annotated read-only, so a probe may call them all.

--tools a,b        list only these tools (a fast fixture for tests that need one defect)
--start-once PATH  refuse to start when PATH exists, and create it: a server that cannot be restarted
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def _tool(name: str, description: str, schema: dict, **extra: object) -> dict:
    return {
        "name": name,
        "description": description,
        "inputSchema": schema,
        "annotations": READ_ONLY,
        **extra,
    }


TOOLS = [
    _tool(
        "echo",
        "Echo the text back.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    _tool(
        "crash_on_bad",
        "Count to a number.",
        {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
    ),
    _tool("malformed", "Answer with a malformed content block.", {"type": "object", "properties": {}}),
    _tool("hang", "Never answer.", {"type": "object", "properties": {}}),
    _tool(
        "bad_schema",
        "Declare an invalid input schema.",
        {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    ),
    _tool(
        "bad_structured",
        "Answer structured content that does not match the output schema.",
        {"type": "object", "properties": {}},
        outputSchema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ),
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(text: object, *, is_error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def call_tool(params: dict) -> dict:
    """The result of tools/call, or raises LookupError for an unknown tool."""
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        if not isinstance(args.get("text"), str):
            return text_result("text is required and must be a string", is_error=True)
        return text_result(args["text"])
    if name == "crash_on_bad":
        if not isinstance(args.get("count"), int):
            print("broken_server: crash_on_bad got a bad count, exiting", file=sys.stderr, flush=True)
            sys.exit(3)
        return text_result(" ".join(str(i) for i in range(1, args["count"] + 1)))
    if name == "malformed":
        return text_result(42)
    if name == "hang":
        time.sleep(3600)
    if name == "bad_schema":
        return text_result("ok")
    if name == "bad_structured":
        return {**text_result('{"n": "one"}'), "structuredContent": {"n": "one"}}
    raise LookupError(f"Unknown tool: {name}")


def handle(message: dict) -> None:
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        return  # a notification (initialized, cancelled): nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": _version(params.get("protocolVersion")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "broken", "version": "0.1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result = call_tool(params)
        except LookupError as exc:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": str(exc)}})
            return
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        send({"jsonrpc": "2.0", "id": msg_id, "error": error})
        return
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _version(requested: object) -> str:
    """The version asked for when supported, else the latest supported (the lifecycle's negotiation)."""
    return requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[-1]  # type: ignore[return-value]


def main() -> None:
    global TOOLS
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", help="comma-separated tool names to list")
    parser.add_argument("--start-once", type=Path, help="marker file: a second start fails")
    opts = parser.parse_args()
    if opts.tools:
        TOOLS = [tool for tool in TOOLS if tool["name"] in opts.tools.split(",")]
    if opts.start_once is not None:
        if opts.start_once.exists():
            print("broken_server: refusing a second start", file=sys.stderr, flush=True)
            sys.exit(1)
        opts.start_once.touch()
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
