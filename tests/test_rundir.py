"""Run folders: ids, exclusive creation under concurrency, lookup."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from mcpipechekr.artifacts.rundir import (
    RunDir,
    baseline_path,
    create_run_dir,
    format_run_id,
    latest_run,
    list_runs,
    open_run,
    parse_run_id,
)
from mcpipechekr.errors import UserError

DAY = date(2025, 1, 14)


def _create_many(runs_dir: str, count: int, start: Any, out: Any) -> None:
    """Runs in a child process: wait for the common start signal, then race the others."""
    start.wait(10)
    for _ in range(count):
        out.put(create_run_dir(runs_dir, today=DAY).run_id)


def test_ids_count_up_per_day_and_restart_on_a_new_day(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert create_run_dir(runs, today=DAY).run_id == "run-20250114-001"
    assert create_run_dir(runs, today=DAY).run_id == "run-20250114-002"
    next_day = DAY + timedelta(days=1)
    assert create_run_dir(runs, today=next_day).run_id == "run-20250115-001"
    assert create_run_dir(runs, today=DAY).run_id == "run-20250114-003"
    assert create_run_dir(runs, today=next_day).run_id == "run-20250115-002"
    assert [r.run_id for r in list_runs(runs)] == [
        "run-20250114-001",
        "run-20250114-002",
        "run-20250114-003",
        "run-20250115-001",
        "run-20250115-002",
    ]


def test_default_day_is_the_local_date(tmp_path: Path) -> None:
    before = date.today()
    run = create_run_dir(tmp_path)
    after = date.today()
    assert run.run_id in {format_run_id(before, 1), format_run_id(after, 1)}


def test_existing_run_is_never_reused_or_touched(tmp_path: Path) -> None:
    first = create_run_dir(tmp_path, today=DAY)
    (first.root / "manifest.json").write_text("first run")
    second = create_run_dir(tmp_path, today=DAY)
    assert second.root != first.root
    assert (first.root / "manifest.json").read_text() == "first run"
    assert list(second.root.iterdir()) == []


def test_gaps_are_not_filled_and_non_folders_are_skipped(tmp_path: Path) -> None:
    for _ in range(3):
        create_run_dir(tmp_path, today=DAY)
    (tmp_path / "run-20250114-002").rmdir()
    assert create_run_dir(tmp_path, today=DAY).run_id == "run-20250114-004"
    (tmp_path / "run-20250114-005").write_text("a stray file with a run's name")
    run = create_run_dir(tmp_path, today=DAY)
    assert run.run_id == "run-20250114-006" and run.root.is_dir()
    assert (tmp_path / "run-20250114-005").read_text() == "a stray file with a run's name"


def test_a_full_day_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "run-20250114-999").mkdir()
    with pytest.raises(UserError) as info:
        create_run_dir(tmp_path, today=DAY)
    assert "999" in info.value.message and "2025-01-14" in info.value.message


def test_concurrent_threads_get_distinct_folders(tmp_path: Path) -> None:
    barrier = threading.Barrier(16)
    results: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        for _ in range(4):
            run_id = create_run_dir(tmp_path, today=DAY).run_id
            with lock:
                results.append(run_id)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 64 and len(set(results)) == 64
    assert sorted(results) == [format_run_id(DAY, n) for n in range(1, 65)]


@pytest.mark.slow
def test_concurrent_processes_get_distinct_folders(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    out = context.Queue()
    procs = [context.Process(target=_create_many, args=(str(tmp_path), 5, start, out)) for _ in range(6)]
    for proc in procs:
        proc.start()
    start.set()
    ids = [out.get(timeout=60) for _ in range(30)]
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    assert len(set(ids)) == 30
    assert sorted(ids) == [format_run_id(DAY, n) for n in range(1, 31)]


def test_run_dir_knows_its_artifact_paths(tmp_path: Path) -> None:
    run = create_run_dir(tmp_path / "runs", today=DAY)
    root = tmp_path / "runs" / "run-20250114-001"
    assert run == RunDir(root)
    assert run.run_id == "run-20250114-001" and run.runs_dir == tmp_path / "runs"
    expected = {
        "manifest": "manifest.json",
        "tools": "tools.json",
        "check_report": "check_report.json",
        "tef_report": "tef_report.json",
        "traces": "traces",
        "bug_report": "bug_report.json",
        "kpi": "kpi.json",
        "phase2_narrative": "phase2_narrative.md",
        "description_suggestions": "description_suggestions.json",
        "review": "review.json",
        "issues": "issues",
        "fix_record": "fix.json",
        "session_summary": "session_summary.md",
        "server_stderr_log": "server.stderr.log",
    }
    assert run.artifact_paths() == {name: root / file for name, file in expected.items()}
    assert run.baseline == baseline_path(tmp_path / "runs") == tmp_path / "runs" / "baseline.json"


def test_listing_ignores_other_entries(tmp_path: Path) -> None:
    assert list_runs(tmp_path / "missing") == [] and latest_run(tmp_path / "missing") is None
    (tmp_path / "baseline.json").write_text("{}")
    (tmp_path / "notes").mkdir()
    (tmp_path / "run-20251341-001").mkdir()  # not a real date
    (tmp_path / "run-20250114-000").mkdir()  # numbers start at 001
    (tmp_path / "run-20250114-01").mkdir()
    assert list_runs(tmp_path) == [] and latest_run(tmp_path) is None
    create_run_dir(tmp_path, today=DAY + timedelta(days=1))
    create_run_dir(tmp_path, today=DAY)
    latest = latest_run(tmp_path)
    assert latest is not None and latest.run_id == "run-20250115-001"


def test_open_run_by_id_and_latest(tmp_path: Path) -> None:
    made = [create_run_dir(tmp_path, today=DAY) for _ in range(7)]
    assert open_run(tmp_path, "run-20250114-003") == made[2]
    assert open_run(tmp_path, "latest") == made[-1]
    with pytest.raises(UserError) as info:
        open_run(tmp_path, "run-20250114-042")
    message = info.value.message
    assert "run-20250114-042" in message and str(tmp_path) in message
    assert all(f"run-20250114-00{n}" in message for n in range(3, 8))
    assert "run-20250114-001" not in message  # only the latest few
    with pytest.raises(UserError) as info:
        open_run(tmp_path, "yesterday")
    assert "run-YYYYMMDD-NNN" in info.value.message


def test_open_run_with_no_runs(tmp_path: Path) -> None:
    for run_id in ("latest", "run-20250114-001"):
        with pytest.raises(UserError) as info:
            open_run(tmp_path, run_id)
        assert "no runs yet" in info.value.message


def test_run_id_round_trip() -> None:
    assert format_run_id(DAY, 7) == "run-20250114-007"
    assert parse_run_id("run-20250114-007") == (DAY, 7)
    assert parse_run_id("run-2025014-007") is None
    with pytest.raises(ValueError):
        format_run_id(DAY, 1000)
