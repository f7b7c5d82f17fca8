"""Benchmark: how lint time grows with the number of tools, and the whole offline lint of the example.

For 50, 200 and 500 generated tools (shared vocabulary, so many pairs share
words and the overlap index has real work), times the offline lint — static
rules, pairwise overlap, security scan, BM25 selection of one query per five
tools, drift — with the cache off, and prints each time against the 50-tool
time measured in the same run. Then times one end-to-end lint of a real
500-tool server (tests/servers/lint_fixture_server.py --generated 500: start,
tools/list, lint) and of the bundled example server.

Targets: the example's whole offline lint < 2 s; 500 tools < 10 s.

Run: python bench/lint_scaling.py [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcpipechekr.artifacts.tools_snapshot import tool_definition
from mcpipechekr.config import Config, ConfigOverrides, load_config
from mcpipechekr.lint import lint
from mcpipechekr.server.target import ServerFlags
from mcpipechekr.tasks import SelectionCase, Task, TaskFile, load_tasks

ROOT = Path(__file__).resolve().parents[1]
SIZES = (50, 200, 500)
VERBS = ["get", "list", "create", "update", "archive", "search", "count", "export", "import", "sync"]
NOUNS = ["invoice", "customer", "order", "shipment", "product", "ticket", "refund", "supplier", "warehouse",
         "payment", "coupon", "review", "category", "employee", "contract", "budget", "report"]  # fmt: skip
QUALIFIERS = ["by id", "by date range", "for one region", "in bulk", "with their history", "by owner",
              "for the current month", "by status", "with attachments", "in the archive"]  # fmt: skip
PARAMS = ["id", "owner", "status", "region", "date_from", "date_to", "limit", "query"]


def generated_tools(n: int, seed: int = 7) -> tuple[list, TaskFile]:
    rng = random.Random(seed)
    tools, cases = [], []
    for index in range(n):
        verb, noun, qual = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(QUALIFIERS)
        name = f"{verb}_{noun}_{index}"
        params = rng.sample(PARAMS, 3)
        tools.append(
            tool_definition(
                {
                    "name": name,
                    "description": f"{verb.capitalize()} {noun} records {qual}. Returns the {noun} entries "
                    f"as JSON with ids, owners and timestamps. Use it when the user asks to {verb} a {noun}.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            p: {"type": "string", "description": f"The {noun}'s {p}."} for p in params
                        },
                        "required": params[:1],
                    },
                    "annotations": {"readOnlyHint": True},
                }
            )
        )
        if index % 5 == 0:
            cases.append(SelectionCase(query=f"Please {verb} the {noun} records {qual}.", expected_tool=name))
    task = Task(task_id="bench", prompt="bench", task_type="deterministic")
    return tools, TaskFile(tasks=[task], selection_cases=cases)


def config_for(home: Path, command: str) -> Config:
    config = load_config(
        home / "config.yaml", ConfigOverrides(server=ServerFlags(command=command)), missing_ok=True
    )
    return config.model_copy(update={"paths": config.paths.model_copy(update={"home": home / "state"})})


def time_offline(n: int, runs: int, home: Path) -> tuple[float, int]:
    tools, taskfile = generated_tools(n)
    config = config_for(home, "python unused.py")
    times, overlaps = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        report = lint(config, tools=tools, taskfile=taskfile, use_cache=False).report
        times.append(time.perf_counter() - started)
        overlaps = len(report.overlaps)
    return statistics.median(times), overlaps


def time_end_to_end(config: Config, taskfile: TaskFile | None = None) -> float:
    started = time.perf_counter()
    lint(config, taskfile=taskfile, use_cache=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        lint(
            config_for(home, "python unused.py"), tools=generated_tools(5)[0], use_cache=False
        )  # warm imports
        print(f"offline lint, generated tools (median of {args.runs}, cache off):")
        baseline = None
        for n in SIZES:
            seconds, overlaps = time_offline(n, args.runs, home)
            baseline = baseline or seconds
            print(
                f"  {n:4d} tools: {seconds:6.3f} s  x{seconds / baseline:5.1f} vs 50 tools "
                f"(tools x{n / SIZES[0]:.0f}, pairs x{n * (n - 1) / (SIZES[0] * (SIZES[0] - 1)):.0f}); "
                f"{overlaps} overlapping pair(s)"
            )
        print("end to end (server start, tools/list, lint):")
        fixture = ROOT / "tests" / "servers" / "lint_fixture_server.py"
        big = config_for(home / "big", f"python {fixture} --generated 500")
        print(f"  500-tool fixture server: {time_end_to_end(big):6.3f} s  (target < 10 s)")
        example = load_config(ROOT / "config.yaml")
        example = example.model_copy(
            update={
                "server": example.server.model_copy(update={"cwd": str(ROOT / "examples" / "emailindex")}),
                "paths": example.paths.model_copy(update={"home": home / "example"}),
            }
        )
        taskfile = load_tasks(ROOT / "tasks.yaml")
        tools_only = time_end_to_end(example, taskfile)
        print(f"  bundled example:         {tools_only:6.3f} s  (target < 2 s)")
        example_tools = _example_tools(example)
        started = time.perf_counter()
        lint(example, tools=example_tools, taskfile=taskfile, use_cache=False)
        lint_only = time.perf_counter() - started
        print(f"  bundled example, lint alone on its listed tools: {lint_only:6.3f} s")


def _example_tools(config: Config) -> list:
    from mcpipechekr.server.lifecycle import ServerUnderTest

    with ServerUnderTest(config.server) as live:
        return live.list_tools()


if __name__ == "__main__":
    sys.exit(main())
