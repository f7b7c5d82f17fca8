"""A tiny MCP server for lifecycle tests, with switches for the ways servers fail.

--exit-at-start CODE   print to stderr and exit before speaking MCP
--hang                 read stdin forever, never answer
--no-tools             register no tools
--http PORT            serve streamable HTTP on 127.0.0.1:PORT instead of stdio
--gate FILE            `sleep` answers only once FILE is gone (a test holds an attempt open with it)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--exit-at-start", type=int)
parser.add_argument("--hang", action="store_true")
parser.add_argument("--no-tools", action="store_true")
parser.add_argument("--http", type=int)
parser.add_argument("--gate")
opts = parser.parse_args()

if opts.exit_at_start is not None:
    print("tiny_server: refusing to start (configuration error: missing DATABASE_URL)", file=sys.stderr)
    sys.exit(opts.exit_at_start)
if opts.hang:
    print("tiny_server: hanging", file=sys.stderr, flush=True)
    while sys.stdin.buffer.read(1):
        pass
    time.sleep(3600)

from mcp.server.mcpserver import MCPServer  # noqa: E402

app = MCPServer("tiny")

if not opts.no_tools:

    @app.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @app.tool(description="Return this server process's id.")
    def pid() -> int:
        return os.getpid()

    @app.tool(description="Sleep for the given seconds, then answer.")
    def sleep(seconds: float) -> str:
        while opts.gate and os.path.exists(opts.gate):
            time.sleep(0.05)
        time.sleep(seconds)
        return "slept"


if __name__ == "__main__":
    if opts.http:
        app.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        app.run()
