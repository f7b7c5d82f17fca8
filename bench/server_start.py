"""Benchmark: cold start + health check of the bundled example server.

Prints the median of 5 starts through `ServerUnderTest` (launch, initialize,
tools/list, stop) against the same work done by a bare `mcp.Client` in the same
run, so the harness's own overhead shows as a ratio, plus the very first start
on an empty folder, which includes building the email archive.

Target: median start + health check < 10 s.

Run: python bench/server_start.py [--runs 5]
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

from mcpipechekr.config import ServerConfig
from mcpipechekr.server.lifecycle import ServerUnderTest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "emailindex"
TARGET_S = 10.0


def harness_start(config: ServerConfig, log: Path) -> float:
    started = time.perf_counter()
    with ServerUnderTest(config, log) as live:
        assert live.health is not None and live.health.tools
    return time.perf_counter() - started


def bare_start(workdir: Path) -> float:
    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["server.py"], cwd=str(workdir))
        async with Client(params) as client:
            assert (await client.list_tools()).tools

    started = time.perf_counter()
    anyio.run(run)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "emailindex"
        shutil.copytree(EXAMPLE, workdir, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
        config = ServerConfig(name="emailindex", command="python", args=["server.py"], cwd=str(workdir))
        log = Path(tmp) / "server.stderr.log"
        first = harness_start(config, log)  # builds the archive
        ours = [harness_start(config, log) for _ in range(opts.runs)]
        bare = [bare_start(workdir) for _ in range(opts.runs)]
    ours_median, bare_median = statistics.median(ours), statistics.median(bare)
    print(f"first start (builds the archive): {first:6.2f} s")
    print(f"harness start + health, median of {opts.runs}: {ours_median:6.2f} s  (target < {TARGET_S:g} s)")
    print(f"bare mcp.Client start + list, median of {opts.runs}: {bare_median:6.2f} s")
    print(f"ratio harness / bare: {ours_median / bare_median:.2f}")
    print("PASS" if ours_median < TARGET_S and first < TARGET_S else "FAIL")


if __name__ == "__main__":
    main()
