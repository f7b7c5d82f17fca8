"""Phase 1 (the scripted demo model) then Phase 2 on the bundled example, before and after the sort fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcpipechekr.artifacts import create_run_dir, read_trace
from mcpipechekr.baseline import build_baseline
from mcpipechekr.config import load_config
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.evaluate.base import call_cost
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.tasks import load_tasks, select_tasks

REPO = Path(__file__).resolve().parents[1]
TASK_IDS = ["find-first-email-ron-chinn", "list-office-move-emails-2024"]

pytestmark = pytest.mark.slow


def project(root: Path, server_dir: Path, db: Path) -> Path:
    config = {
        "server": {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": str(server_dir),
            "env": {"EMAILINDEX_DB": str(db)},
        },
        "paths": {"tasks": str(REPO / "tasks.yaml"), "runs": "runs", "home": "home"},
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def demo_run(config_path: Path, task_ids: list[str], repeat: int):
    config = load_config(config_path)
    tasks = select_tasks(load_tasks(config.paths.tasks), task_ids)
    run = create_run_dir(config.paths.runs)
    demo = [ProviderSpec(provider="demo")]
    run_phase1(config, run, tasks, demo, repeat=repeat, concurrency=4, progress=False)
    return config, run


def test_demo_traces_give_the_date_sort_gap_and_the_fts_rank_bug(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    config_path = project(tmp_path, emailindex_dir, emailindex_db)
    config, run = demo_run(config_path, TASK_IDS, repeat=2)
    build_baseline(config, task_ids=TASK_IDS)
    report = evaluate_run(config, run)

    bugs = {bug.id: bug for bug in report.bugs}
    gap = bugs["GAP-no-date-sort-query-email-database"]
    assert gap.type == "feature_gap" and gap.tool == "query_email_database" and gap.occurrences == 2
    assert gap.token_cost_of_gap > 0 and len(gap.details["windows"]) >= 2
    assert (
        "add a sort_order parameter (date_asc/date_desc) to query_email_database" in gap.acceptance_criteria
    )
    fts = bugs["BUG-no-such-column-fts-rank-query-email-database"]
    assert fts.type == "bug" and fts.occurrences == 2 and fts.token_cost_of_gap > 0
    assert "no such column: fts.rank" in fts.details["error_text"]
    assert any("combined with fields must return the projected fields" in c for c in fts.acceptance_criteria)
    gaps = [bug.token_cost_of_gap for bug in report.bugs]
    assert gaps == sorted(gaps, reverse=True)
    # Four windows are four round trips, each re-reading the conversation: the costliest defect.
    assert report.bugs[0].id == gap.id and gap.token_cost_of_gap > fts.token_cost_of_gap
    calls = [
        sum(call_cost(read_trace(run.root / e.trace).steps[step]) for step in e.steps) for e in gap.evidence
    ]
    assert gap.token_cost_of_gap > max(calls), "more than every call of the walk and the listing together"
    assert not [bug for bug in report.bugs if bug.type == "correctness"], (
        "the demo's answers match the baseline"
    )
    assert {(s.task_id, s.runs, s.successes) for s in report.tasks} == {(t, 2, 2) for t in TASK_IDS}


def test_after_the_sort_fix_the_gap_is_gone(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    fixed = tmp_path / "emailindex"
    shutil.copytree(emailindex_dir, fixed, ignore=shutil.ignore_patterns("__pycache__", "archive.db"))
    patch = fixed / "fixes" / "0001-add-sort-order.patch"
    subprocess.run(["git", "apply", str(patch)], cwd=fixed, check=True, capture_output=True)
    config, run = demo_run(project(tmp_path, fixed, emailindex_db), TASK_IDS[:1], repeat=1)
    report = evaluate_run(config, run)
    assert not [bug for bug in report.bugs if bug.id.startswith("GAP-no-date-sort")]
    assert report.tasks[0].mean_calls == 1
