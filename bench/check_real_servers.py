"""Benchmark: `mcpipechekr check` on published MCP servers nobody here wrote.

For each server of bench/real_servers.py (pinned PyPI and npm packages,
installed once into .cache/real-servers/), seed its state in a temporary
folder, run every layer of `check` through the library (`run_check`, the call
behind the CLI), and print its FAILs and WARNs with their reasons, the
coverage of PC-10 (read-only tools reached with a successful call / tools
check may call), and the wall time. Target: no FAIL, the state unchanged, and
coverage >= 0.8 of the tools that do not need the network (the fetch server's
one tool cannot be reached offline: its calls are SKIP "needs network").

Then the cost of argument synthesis: a whole check of the git server (12
tools) with `check.synthesize` on and off, interleaved, median of --runs.
Target: ratio < 2.

Then servers that annotate none of their tools (`real_servers.UNANNOTATED`: a
SQLite server from PyPI and one from npm, a task board, a text editor, and a
shell server), each checked with the tools its author would trust as
read-only in `check.read_only` (none for the shell server). Printed: what
`check` suggested trusting, against that choice; coverage of the trusted
tools (target >= 0.8); every FAIL and WARN (judged in docs/check.md); and
whether the state was left unchanged (target: always).

Run: python bench/check_real_servers.py [--runs 3] [--only git,time] [--markdown]
     [--section annotated|unannotated|all]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_servers as published  # noqa: E402

from mcpipechekr.artifacts.check_report import CheckReport  # noqa: E402
from mcpipechekr.check.orchestrate import run_check  # noqa: E402

COVERAGE_TARGET, RATIO_TARGET = 0.8, 2.0
RATIO_SERVER = "git"


@dataclass
class Measured:
    server: published.RealServer
    report: CheckReport
    seconds: float
    state_kept: bool

    @property
    def fails(self) -> list[tuple[str, str]]:
        return [(r.id, r.reason) for r in self.report.checks if r.status == "FAIL"]

    @property
    def warns(self) -> list[tuple[str, str]]:
        return [(r.id, r.reason) for r in self.report.checks if r.status == "WARN"]

    @property
    def coverage(self) -> tuple[int, int, int]:
        """(reached, tools check may call, of those the ones that need the network)."""
        coverage = self.report.coverage
        if coverage is None:
            return 0, 0, 0
        offline = sum(1 for tool in coverage.tools if tool.status == "needs_network")
        return coverage.reached, coverage.callable_tools, offline

    @property
    def offline_coverage(self) -> float | None:
        """Reached / tools check may call that do not need the network (the target), None when none."""
        reached, callable_tools, network = self.coverage
        reachable = callable_tools - network
        return reached / reachable if reachable else None


def check_once(server: published.RealServer, cache: Path, **check: object) -> Measured:
    """Seed the server's state, check it (every layer), and say whether the state survived."""
    with tempfile.TemporaryDirectory(prefix=f"real-{server.key}-") as tmp:
        folder = Path(tmp) / "state"
        folder.mkdir()
        seeded = server.seed(folder)
        before = published.snapshot(seeded)
        started = time.perf_counter()
        report = run_check(server.config(cache, seeded, **check), log_path=Path(tmp) / "server.stderr.log")
        seconds = time.perf_counter() - started
        return Measured(server, report, seconds, published.snapshot(seeded) == before)


def _coverage_text(measured: Measured) -> str:
    reached, callable_tools, network = measured.coverage
    text = f"{reached}/{callable_tools}"
    if network:
        text += f" ({network} need{'s' if network == 1 else ''} the network)"
    if measured.offline_coverage is not None:
        text += f" = {measured.offline_coverage:.2f}" + (" offline" if network else "")
    return text


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def print_server(measured: Measured) -> None:
    server, summary = measured.server, measured.report.summary
    print(f"\n== {server.key}: {server.pin}")
    print(
        f"   {summary.total} checks: {summary.passed} PASS, {summary.failed} FAIL, {summary.warned} WARN, "
        f"{summary.skipped} SKIP; coverage {_coverage_text(measured)}; {measured.seconds:.1f} s; "
        f"state {'unchanged' if measured.state_kept else 'CHANGED'}"
    )
    for label, items in (("FAIL", measured.fails), ("WARN", measured.warns)):
        for check_id, reason in items:
            print(f"   {label} {check_id}: {_first_line(reason)}")
    coverage = measured.report.coverage
    for tool in coverage.tools if coverage is not None else []:
        if tool.status != "reached":
            print(f"   {tool.status} {tool.tool}: {_first_line(tool.error or '')}")


def markdown_table(rows: list[Measured]) -> str:
    lines = [
        "| Server | Version | Tools (callable) | FAIL | WARN | Coverage | Time |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for measured in rows:
        listed = next(r for r in measured.report.checks if r.id == "PC-02").details.get("tools", [])
        lines.append(
            f"| `{measured.server.package}` | {measured.server.version} | {len(listed)} "
            f"({measured.coverage[1]}) | {len(measured.fails)} | {len(measured.warns)} | "
            f"{_coverage_text(measured)} | {measured.seconds:.1f} s |"
        )
    return "\n".join(lines)


def synthesis_ratio(cache: Path, runs: int) -> tuple[float, float]:
    """Median seconds of a whole check with synthesis on and off (`check.synthesize`)."""
    server, on, off = published.BY_KEY[RATIO_SERVER], [], []
    for _ in range(runs):  # interleaved, so drift in machine load hits both sides alike
        on.append(check_once(server, cache, synthesize=True).seconds)
        off.append(check_once(server, cache, synthesize=False).seconds)
    return statistics.median(on), statistics.median(off)


def print_trust(measured: Measured, suggested: list[str]) -> bool:
    """What check suggested trusting before any trust, against the author's choice; True when it
    suggested nothing the author would not trust."""
    chosen = set(measured.server.read_only)
    trusted = sorted(tool.tool for tool in measured.report.trusted_read_only)
    false = [tool for tool in suggested if tool not in chosen]
    print(
        f"   author trusts {', '.join(trusted) or 'none'}; check suggested {', '.join(suggested) or 'none'} "
        f"({len(set(suggested) & chosen)} of the author's {len(chosen)})"
    )
    if false:
        print(f"   SUGGESTED OUTSIDE THE AUTHOR'S CHOICE: {', '.join(false)}")
    return not false


def unannotated_section(cache: Path, keys: list[str] | None) -> bool:
    """Check each unannotated server with its read-only tools trusted; True when every target holds."""
    chosen = [s for s in published.UNANNOTATED if keys is None or s.key in keys]
    if not chosen:
        return True
    published.install(cache, servers=published.UNANNOTATED, log=lambda line: print(line, file=sys.stderr))
    print("\n== servers that annotate none of their tools, read-only tools trusted by their author")
    ok = True
    for server in chosen:
        first = check_once(server, cache)  # as a stranger meets it: nothing trusted, nothing called
        suggested = sorted(candidate.tool for candidate in first.report.read_only_candidates)
        measured = check_once(server, cache, read_only=list(server.read_only))
        print_server(measured)
        ok &= print_trust(measured, suggested)
        ok &= first.state_kept and measured.state_kept and first.coverage[0] == 0
        ok &= measured.offline_coverage is None or measured.offline_coverage >= COVERAGE_TARGET
    print(
        f"\ntargets (unannotated): nothing called before trust, state unchanged, coverage of trusted "
        f"tools >= {COVERAGE_TARGET:g}, no tool suggested that its author would not trust"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="whole checks of each kind for the ratio (median)"
    )
    parser.add_argument("--only", help="comma-separated server keys (default: all)")
    parser.add_argument("--markdown", action="store_true", help="also print the table for docs/check.md")
    parser.add_argument("--section", choices=["annotated", "unannotated", "all"], default="all")
    opts = parser.parse_args()
    only = opts.only.split(",") if opts.only else None
    annotated = {server.key for server in published.SERVERS}
    keys = [key for key in (only or [s.key for s in published.SERVERS]) if key in annotated]
    if opts.section == "unannotated":
        keys = []
    cache = published.install(log=lambda line: print(line, file=sys.stderr))

    rows = [check_once(published.BY_KEY[key], cache) for key in keys]
    for measured in rows:
        print_server(measured)
    if opts.markdown:
        print("\n" + markdown_table(rows))

    ok = all(not m.fails and m.state_kept for m in rows)
    ok &= all(m.offline_coverage is None or m.offline_coverage >= COVERAGE_TARGET for m in rows)
    reached = sum(m.coverage[0] for m in rows)
    reachable = sum(m.coverage[1] - m.coverage[2] for m in rows)
    if reachable:
        print(f"\ncoverage over all servers, offline: {reached}/{reachable} = {reached / reachable:.2f}")
    if RATIO_SERVER in keys:
        on, off = synthesis_ratio(cache, opts.runs)
        print(
            f"whole check of {RATIO_SERVER}, median of {opts.runs}: "
            f"synthesis on {on:.2f} s, off {off:.2f} s, ratio {on / off:.2f} (target < {RATIO_TARGET:g})"
        )
        ok &= on / off < RATIO_TARGET
    if rows:
        print(
            "\ntargets: no FAIL, state unchanged, coverage >= "
            f"{COVERAGE_TARGET:g} per server, synthesis ratio < {RATIO_TARGET:g}"
        )
    if opts.section != "annotated":
        ok &= unannotated_section(cache, only)
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
