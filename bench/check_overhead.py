"""Benchmark: what `mcpipechekr check` adds on top of talking MCP, on the bundled example server.

1. Per-call overhead: N calls of `count_emails` through `ServerUnderTest.call_tool` (the
   path every check takes: a blocking portal into a background event loop, a timeout and
   halt guard per call) against N calls through a bare `mcp.Client` loop on its own server
   process, measured in the same run. Target: ratio <= 1.2.
2. Whole check: `run_check` with all three layers and the shipped cases file, server start
   included. Target: < 5 s.

Run: python bench/check_overhead.py [--calls 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.config import Config, ServerConfig
from mcpipechekr.server.lifecycle import ServerUnderTest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "emailindex"
CASES = REPO / "checks" / "emailindex.cases.yaml"
EXPECTED = REPO / "checks" / "emailindex.expected-failures.yaml"
RATIO_TARGET, WHOLE_TARGET_S = 1.2, 5.0
TOOL, ARGS = "count_emails", {"sender": "Dana Whitfield"}


def harness_calls(config: ServerConfig, log: Path, calls: int) -> float:
    """Seconds per call through ServerUnderTest (server start excluded)."""
    with ServerUnderTest(config, log) as live:
        live.call_tool(TOOL, ARGS, timeout_s=30)  # warm-up
        started = time.perf_counter()
        for _ in range(calls):
            live.call_tool(TOOL, ARGS, timeout_s=30)
        return (time.perf_counter() - started) / calls


def bare_calls(workdir: Path, calls: int) -> float:
    """Seconds per call through a bare mcp.Client loop (server start excluded)."""
    box: dict[str, float] = {}

    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["server.py"], cwd=str(workdir))
        async with Client(params) as client:
            await client.call_tool(TOOL, ARGS)
            started = time.perf_counter()
            for _ in range(calls):
                await client.call_tool(TOOL, ARGS)
            box["per_call"] = (time.perf_counter() - started) / calls

    anyio.run(run)
    return box["per_call"]


def whole_check(config: ServerConfig, log: Path) -> tuple[float, int, int]:
    started = time.perf_counter()
    report = run_check(Config(server=config), cases_path=CASES, expected_failures_path=EXPECTED, log_path=log)
    return time.perf_counter() - started, len(report.checks), report.exit_code


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="calls per measurement")
    parser.add_argument("--runs", type=int, default=3, help="measurements of each kind (median taken)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "emailindex"
        shutil.copytree(EXAMPLE, workdir, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
        config = ServerConfig(name="emailindex", command="python", args=["server.py"], cwd=str(workdir))
        log = Path(tmp) / "server.stderr.log"
        with ServerUnderTest(config, log):  # builds the archive once, outside every measurement
            pass
        ours, bare = [], []
        for _ in range(opts.runs):  # interleaved, so drift in machine load hits both sides alike
            ours.append(harness_calls(config, log, opts.calls))
            bare.append(bare_calls(workdir, opts.calls))
        wholes = [whole_check(config, log) for _ in range(opts.runs)]
    ours_ms, bare_ms = statistics.median(ours) * 1000, statistics.median(bare) * 1000
    ratio = ours_ms / bare_ms
    whole_s = statistics.median(seconds for seconds, _, _ in wholes)
    _, checks, exit_code = wholes[0]
    print(f"per call via ServerUnderTest.call_tool, median of {opts.runs} x {opts.calls}: {ours_ms:7.3f} ms")
    print(f"per call via bare mcp.Client,           median of {opts.runs} x {opts.calls}: {bare_ms:7.3f} ms")
    print(f"ratio check path / bare client: {ratio:.2f}  (target <= {RATIO_TARGET})")
    print(
        f"whole check (3 layers, {checks} checks, exit {exit_code}), median of {opts.runs}: "
        f"{whole_s:.2f} s  (target < {WHOLE_TARGET_S:g} s)"
    )
    print("PASS" if ratio <= RATIO_TARGET and whole_s < WHOLE_TARGET_S else "FAIL")


if __name__ == "__main__":
    main()
