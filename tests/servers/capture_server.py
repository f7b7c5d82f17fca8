"""An MCP server for capture and Phase 1 execution tests: echo, errors, a crash, a slow call, a secret.

    python capture_server.py              # stdio
    python capture_server.py --http PORT  # streamable HTTP at http://127.0.0.1:PORT/mcp

Tools: `echo(text)`; `fail(message)` answers with an isError result; `crash(code, signal)`
makes the process exit at once with `code`, or die of `signal` (e.g. `SIGTERM`), without
answering; `slow(seconds)`; `secret()` returns the value of $CAPTURE_SECRET (to prove journals
and traces redact it).
"""

from __future__ import annotations

import argparse
import os
import signal as signals
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("capture-test", log_level="WARNING")


@app.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@app.tool(description="Fail with this message (an isError result).")
def fail(message: str) -> str:
    raise ToolError(message)


@app.tool(
    description="Exit the server process at once with this code, or die of this signal, without answering."
)
def crash(code: int = 3, signal: str = "") -> str:
    if signal:  # e.g. "SIGTERM": the death an agent's shutdown also causes, but in the middle of a call
        os.kill(os.getpid(), getattr(signals, signal))
        time.sleep(10)  # the signal's default action ends the process before this does
    os._exit(code)


@app.tool(description="Sleep for the given seconds, then answer.")
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return f"slept {seconds}"


@app.tool(description="Return the server's secret setting.")
def secret() -> str:
    return os.environ.get("CAPTURE_SECRET", "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--json-response", action="store_true", help="HTTP: answer POSTs with JSON, not SSE.")
    opts = parser.parse_args()
    if opts.http:
        app.run(
            "streamable-http",
            host="127.0.0.1",
            port=opts.http,
            streamable_http_path="/mcp",
            json_response=opts.json_response,
        )
    else:
        app.run()
