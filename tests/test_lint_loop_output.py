"""In a run (each iteration of `doit loop`), lint prints only what changed since the previous lint.

The lint step runs on a real server over stdio, in real run folders opened as
the loop opens them; between iterations one tool's description changes, then a
group of tools disappears. `mcpipechekr lint` on its own still prints everything.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner
from rich.console import Console

from mcpipechekr.artifacts import TefReport, read_model
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.lint.changes import shown_path
from mcpipechekr.steps.lint import lint_step
from mcpipechekr.steps.snapshot import snapshot_step
from mcpipechekr.steps.stage import plan_run_folder
from mcpipechekr.tasks import load_tasks

FIXTURE = Path(__file__).resolve().parent / "servers" / "lint_fixture_server.py"
SLOPPY = ("delete_thing", "exportReport", "ping_service")  # the tools of --sloppy
TASKS = {
    "tasks": [
        {
            "task_id": "order",
            "prompt": "Where is my order 1042?",
            "task_type": "deterministic",
            "expected_tool": "get_order",
        }
    ],
    "selection_cases": [
        {"query": "Search the customers in Leeds", "expected_tool": "search_customers"},
        {"query": "Find customers named Smith", "expected_tool": "find_customers"},
        {"query": "Look up customer records for Ada", "expected_tool": "search_customers"},
    ],
}


def write_config(folder: Path, *switches: str) -> Path:
    config = {
        "server": {"name": "fixture", "command": sys.executable, "args": [str(FIXTURE), *switches]},
        "paths": {
            "home": str(folder / "home"),
            "tasks": str(folder / "tasks.yaml"),
            "runs": str(folder / "runs"),
        },
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    return folder / "config.yaml"


def iteration(folder: Path, *switches: str, accept: tuple[str, ...] = ()) -> tuple[list[str], TefReport]:
    """One loop iteration's lint: a new run folder and its tools.json, then the lint step; its output."""
    config = load_config(write_config(folder, *switches))
    tasks = load_tasks(config.paths.tasks).tasks
    plan = plan_run_folder(config, tasks, runner="native", keep_builtin_tools=False, repeat=1, new_run=True)
    snapshot_step(config, plan, tasks)
    buffer = io.StringIO()
    lint_step(
        config, plan.run_dir, accept_risks=accept, interactive=False, out=Console(file=buffer, width=400)
    )
    return buffer.getvalue().splitlines(), read_model(plan.run_dir.tef_report, TefReport)


def test_unchanged_findings_are_not_repeated_from_one_iteration_to_the_next(tmp_path: Path) -> None:
    # delete_thing has no description (TEF-D001, blocking): accepted once, kept while it is unchanged.
    first, report = iteration(tmp_path, "--near-duplicates", "--sloppy", accept=("delete_thing",))
    assert first[0].startswith("lint (lexical-bm25): ")
    shown = [line for line in first[1:] if line.startswith("  [")]
    # The first lint shows every finding, selection notes with how to get a model's figures.
    sloppy = [line for line in shown if any(name in line for name in SLOPPY)]
    assert sloppy and any("TEF-P001" in line for line in sloppy)
    assert any(line.startswith("  [note] tool '") and "lexical selection precision" in line for line in shown)
    assert any("--phase05-provider PROVIDER/MODEL" in line for line in first)
    assert any(line.startswith("  overlap: search_customers ~ find_customers") for line in first)
    assert not any("unchanged finding(s)" in line for line in first)
    total = len(shown) + sum(1 for line in first if line.startswith("  overlap: "))
    assert shown_path(tmp_path / "home", "fixture").exists()

    # get_order's description and schema change: only its lines are new; the rest is counted.
    second, report2 = iteration(tmp_path, "--near-duplicates", "--sloppy", "--schema-v2")
    assert report2.drift.changed[0].tool == "get_order"
    body = second[1:]
    assert not any(name in line for line in body for name in (*SLOPPY, "overlap:"))
    assert not any("--phase05-provider" in line for line in body)  # the selection notes did not change
    get_order_lines = [line for line in body if line.startswith("  [") and "get_order" in line]
    assert body[: len(get_order_lines)] == get_order_lines
    assert body[-1] == (
        f"  {total - len(get_order_lines)} unchanged finding(s) since the last lint, not repeated: "
        "kept in tef_report.json (`mcpipechekr lint` prints them all)"
    )
    # The report keeps every finding, printed or not.
    assert {t.name for t in report2.tools if t.findings} >= {"exportReport", "delete_thing"}

    # Nothing changes: one line says so.
    third, _ = iteration(tmp_path, "--near-duplicates", "--sloppy", "--schema-v2")
    assert third[1:] == [body[-1].replace(str(total - len(get_order_lines)), str(total))]

    # The sloppy tools disappear: their findings are reported gone with them, once.
    fourth, _ = iteration(tmp_path, "--near-duplicates", "--schema-v2")
    gone = [line.removeprefix("  gone with its tool: ") for line in fourth if line.startswith("  gone with")]
    assert sorted(gone) == sorted(line.strip() for line in sloppy)
    assert not any(line.startswith("  resolved: ") for line in fourth)
    fifth, _ = iteration(tmp_path, "--near-duplicates", "--schema-v2")
    assert not any("gone with" in line for line in fifth)

    # `mcpipechekr lint` alone prints its whole report, unchanged findings included.
    result = CliRunner().invoke(
        main, ["lint", "--config", str(tmp_path / "config.yaml")], catch_exceptions=False
    )
    assert "  search_customers ~ find_customers: score" in result.output
    assert "lexical selection precision" in result.output
