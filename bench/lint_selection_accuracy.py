"""Top-1 accuracy of lint's offline (lexical) tool selector on labelled queries, previous vs current.

    .venv/bin/python bench/lint_selection_accuracy.py [--misses]

The corpus is tests/fixtures/lint/selection/queries.yaml: requests written as a
user would type them, each labelled with the tool to call first, for the
published servers whose tools/list is kept there as JSON (mcp-server-git,
server-filesystem, server-memory, mcp-server-time) and for two servers of
tests/servers, started over stdio. Both scorers run on the same corpus in the
same process: the previous plain BM25 (`lint_selection_previous.py`, a frozen
copy) and the current `LexicalSelector`. Printed per server and overall as
right/total and the ratio; `--misses` lists every query the current scorer
gets wrong. Exit status 0 whatever the figures (a benchmark, not a test);
tests/test_lint_selection_lexical.py holds the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_selection_previous import PreviousLexicalSelector  # noqa: E402

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition, tool_definition  # noqa: E402
from mcpipechekr.lint.selection import LexicalSelector, SelectionQuery, Selector  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fixtures" / "lint" / "selection"
SERVERS = REPO / "tests" / "servers"


@dataclass
class ServerCase:
    """One server of the corpus: its tools and its labelled queries."""

    name: str
    tools: list[ToolDefinition]
    queries: list[SelectionQuery]


def list_tools_over_stdio(script: Path) -> list[ToolDefinition]:
    """The tools of a tests/servers script, started with this Python over stdio."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def listing() -> list:
        params = StdioServerParameters(command=sys.executable, args=[str(script)])
        async with Client(stdio_client(params)) as client:
            return list((await client.list_tools()).tools)

    return [tool_definition(tool) for tool in asyncio.run(listing())]


def load_corpus(folder: Path = CORPUS) -> list[ServerCase]:
    """Every server of queries.yaml with its tools (from the JSON fixture, or listed live) and queries."""
    data = yaml.safe_load((folder / "queries.yaml").read_text(encoding="utf-8"))
    cases = []
    for entry in data["servers"]:
        if "tools" in entry:
            listed = json.loads((folder / entry["tools"]).read_text(encoding="utf-8"))["tools"]
            tools = [tool_definition(tool) for tool in listed]
        else:
            tools = list_tools_over_stdio(SERVERS / entry["server"])
        names = {tool.name for tool in tools}
        queries = []
        for index, (text, expected) in enumerate(entry["queries"]):
            if expected not in names:
                raise SystemExit(f"queries.yaml: {entry['name']} query {index + 1}: no tool {expected!r}")
            queries.append(SelectionQuery(text, expected, f"{entry['name']}:{index + 1}"))
        cases.append(ServerCase(entry["name"], tools, queries))
    return cases


def picks(selector: Selector, case: ServerCase) -> list[str | None]:
    """The tool the selector picks for each query of one server (its first sample)."""
    return [samples[0].tool for samples in selector.select(case.queries, case.tools, 1)]


def right(selector: Selector, cases: Sequence[ServerCase]) -> dict[str, tuple[int, int]]:
    """Per server: (queries picked right, queries)."""
    out = {}
    for case in cases:
        chosen = picks(selector, case)
        hits = sum(1 for query, tool in zip(case.queries, chosen, strict=True) if tool == query.expected_tool)
        out[case.name] = (hits, len(case.queries))
    return out


def overall(per_server: dict[str, tuple[int, int]]) -> float:
    """Top-1 accuracy over every query of the corpus."""
    hits = sum(h for h, _ in per_server.values())
    total = sum(n for _, n in per_server.values())
    return hits / total if total else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the queries the current scorer misses")
    args = parser.parse_args(argv)
    cases = load_corpus()
    before = right(PreviousLexicalSelector(), cases)
    after = right(LexicalSelector(), cases)
    print(f"{'server':<20} {'tools':>5} {'previous':>12} {'current':>12}")
    for case in cases:
        (b, n), (a, _) = before[case.name], after[case.name]
        print(f"{case.name:<20} {len(case.tools):>5} {b:>3}/{n:<3} {b / n:4.2f} {a:>3}/{n:<3} {a / n:4.2f}")
    total = sum(n for _, n in after.values())
    b_all = sum(h for h, _ in before.values())
    a_all = sum(h for h, _ in after.values())
    b_ratio, a_ratio = overall(before), overall(after)
    print(f"{'all':<20} {'':>5} {b_all:>3}/{total:<3} {b_ratio:4.2f} {a_all:>3}/{total:<3} {a_ratio:4.2f}")
    print(f"top-1 accuracy: previous {overall(before):.3f}, current {overall(after):.3f}")
    if args.misses:
        current = LexicalSelector()
        for case in cases:
            for query, tool in zip(case.queries, picks(current, case), strict=True):
                if tool != query.expected_tool:
                    print(f"  miss {query.source}: {query.text!r} -> {tool} (expected {query.expected_tool})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
