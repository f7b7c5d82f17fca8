"""Benchmark: what the capture proxy adds to each MCP tool call, against a direct connection.

The bundled example server, the same tool call (`count_emails`), N calls each way
in the same run, per-call wall time from an mcp.Client:

1. stdio: the client launches the server directly, and
   `python -m mcpipechekr.capture … -- server` (a journal is written);
2. streamable HTTP: one server process; the client talks to its URL, and to
   an `HttpCaptureProxy` route in front of it (the proxy serving from its own
   thread, as for an agent CLI).

Both clients are open at once and their calls alternate (which goes first
alternates too), so a machine whose load changes during the run slows both
alike. Reported: the median per-call time of each, the median of the paired
differences (proxied minus direct: the overhead) and the ratio; for HTTP also
the proxy thread's CPU time per call, which load does not blur. Target: median
overhead < 2 ms per call.

Run: python bench/proxy_overhead.py [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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
Target = StdioServerParameters | str


async def _paired_calls(direct: Target, proxied: Target, calls: int) -> tuple[list[float], list[float]]:
    """Per-call times (ms) of the same call made directly and through the proxy, alternating."""
    times: tuple[list[float], list[float]] = ([], [])
    async with Client(direct) as first, Client(proxied) as second:
        clients = (first, second)
        for _ in range(5):  # warm-up
            for client in clients:
                await client.call_tool(TOOL, ARGS)
        for number in range(calls):
            for which in (0, 1) if number % 2 == 0 else (1, 0):
                started = time.perf_counter()
                await clients[which].call_tool(TOOL, ARGS)
                times[which].append((time.perf_counter() - started) * 1000)
    return times


def measure(direct: Target, proxied: Target, calls: int) -> tuple[list[float], list[float]]:
    box: list[tuple[list[float], list[float]]] = []

    async def run() -> None:
        box.append(await _paired_calls(direct, proxied, calls))

    anyio.run(run)
    return box[0]


def thread_cpu_s(thread: threading.Thread | None) -> float:
    """CPU time a thread of this process has used so far (Linux), 0 where that cannot be read."""
    try:
        fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(label: str, direct: list[float], proxied: list[float], extra: str = "") -> bool:
    d, p = statistics.median(direct), statistics.median(proxied)
    overhead = statistics.median(b - a for a, b in zip(direct, proxied, strict=True))
    ok = overhead < TARGET_MS
    p90 = statistics.quantiles(proxied, n=10)[-1] - statistics.quantiles(direct, n=10)[-1]
    print(
        f"{label:6} direct {d:7.3f} ms  proxied {p:7.3f} ms  overhead {overhead:+7.3f} ms "
        f"(ratio {p / d:.2f}; p90 overhead {p90:+.3f} ms{extra})  "
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

        journal = Path(tmp) / "stdio.jsonl"
        agent = proxy_server(config, journal, "emailindex")
        direct, proxied = measure(
            StdioServerParameters(command=sys.executable, args=["server.py"], cwd=str(workdir)),
            StdioServerParameters(command=agent.command or "", args=list(agent.args)),
            opts.calls,
        )
        recorded = len(journal_tool_calls(journal))
        print(f"{opts.calls} calls of {TOOL} each way, alternating; stdio journal recorded {recorded} calls")
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
            with HttpCaptureProxy(url) as proxy:
                route = proxy.route(Path(tmp) / "http.jsonl")
                cpu = thread_cpu_s(proxy._thread)
                direct_http, proxied_http = measure(url, route, opts.calls)
                cpu = (thread_cpu_s(proxy._thread) - cpu) * 1000 / (opts.calls + 5)
            ok = report("http", direct_http, proxied_http, f"; proxy CPU {cpu:.2f} ms/call") and ok
        finally:
            server.terminate()
            server.wait(timeout=10)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
