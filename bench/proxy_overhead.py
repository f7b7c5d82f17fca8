"""Benchmark: what the capture proxy adds to each MCP tool call, against a direct connection.

The bundled example server, the same tool call (`count_emails`), N calls each way
in the same run, per-call wall time from an mcp.Client:

1. stdio: the client launches the server directly, then launches
   `python -m mcpipechekr.capture … -- server` (a journal is written);
2. streamable HTTP: one server process; the client talks to its URL, then to
   an `HttpCaptureProxy` route in front of it.

Reported: the median per-call time of each, the median overhead (proxied minus
direct) and the ratio. Target: median overhead < 2 ms per call.

Run: python bench/proxy_overhead.py [--calls 300]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from mcpipechekr.capture import HttpCaptureProxy, journal_tool_calls, proxy_server
from mcpipechekr.config import ServerConfig

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from fakes.net import free_port, wait_port  # noqa: E402

EXAMPLE = REPO / "examples" / "emailindex"
TOOL, ARGS = "count_emails", {"sender": "Dana Whitfield"}
TARGET_MS = 2.0


async def _timed_calls(target: StdioServerParameters | str, calls: int) -> list[float]:
    async with Client(target) as client:
        for _ in range(5):  # warm-up
            await client.call_tool(TOOL, ARGS)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool(TOOL, ARGS)
            times.append((time.perf_counter() - started) * 1000)
        return times


def measure(target: StdioServerParameters | str, calls: int) -> list[float]:
    box: list[list[float]] = []

    async def run() -> None:
        box.append(await _timed_calls(target, calls))

    anyio.run(run)
    return box[0]


def report(label: str, direct: list[float], proxied: list[float]) -> bool:
    d, p = statistics.median(direct), statistics.median(proxied)
    overhead = p - d
    ok = overhead < TARGET_MS
    p90 = statistics.quantiles(proxied, n=10)[-1] - statistics.quantiles(direct, n=10)[-1]
    print(
        f"{label:6} direct {d:7.3f} ms  proxied {p:7.3f} ms  overhead {overhead:+7.3f} ms "
        f"(ratio {p / d:.2f}; p90 overhead {p90:+.3f} ms)  "
        f"{'OK' if ok else 'ABOVE TARGET'} (< {TARGET_MS:g} ms)"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="timed calls per measurement")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "emailindex"
        shutil.copytree(EXAMPLE, workdir, ignore=shutil.ignore_patterns("__pycache__"))
        config = ServerConfig(name="emailindex", command="python", args=["server.py"], cwd=str(workdir))

        direct = measure(
            StdioServerParameters(command=sys.executable, args=["server.py"], cwd=str(workdir)), opts.calls
        )
        journal = Path(tmp) / "stdio.jsonl"
        agent = proxy_server(config, journal, "emailindex")
        proxied = measure(
            StdioServerParameters(command=agent.command or "", args=list(agent.args)), opts.calls
        )
        recorded = len(journal_tool_calls(journal))
        print(f"{opts.calls} calls of {TOOL} each way; stdio journal recorded {recorded} calls")
        ok = report("stdio", direct, proxied)

        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "server.py", "--http", str(port)],
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            wait_port(port, server, timeout_s=30)
            direct_http = measure(url, opts.calls)
            with HttpCaptureProxy(url) as proxy:
                route = proxy.route(Path(tmp) / "http.jsonl")
                proxied_http = measure(route, opts.calls)
            ok = report("http", direct_http, proxied_http) and ok
        finally:
            server.terminate()
            server.wait(timeout=10)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
