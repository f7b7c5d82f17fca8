"""A newcomer's three commands, from an empty folder, on a published-style server: no hand edit anywhere.

The server is tests/servers/slow_notes, installed as a package into a virtual
environment of its own (no checkout), its data under a HOME given with
`--env`, two seconds to start (bench/time_to_value.py measures the 20 s
case). The commands are the installed scripts, exactly as docs/own-server.md
opens:

    mcpipechekr init --command …/bin/slow-notes-mcp --env HOME=… --env SLOW_NOTES_START_S=2
    mcpipechekr tasks propose
    doit baseline loop

Nothing is edited between them, no model or agent CLI is installed for them,
and the loop, without a terminal, stops at the review with a priced bug
report. The server logs each start, so the test also holds the loop to one
start for the baseline and the tools snapshot together, and to one per attempt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from fakes.packaged_server import install_slow_notes, newcomer_commands
from project import installed

from mcpipechekr.artifacts import BugReport, list_runs, read_model, read_trace
from mcpipechekr.artifacts.journal import read_journal

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_time_to_value")]

BIN = Path(os.environ.get("MCPIPECHEKR_TEST_BIN") or Path(sys.executable).parent)


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The three commands run once, in an empty folder; what each printed and what the server saw."""
    root = tmp_path_factory.mktemp("newcomer")
    script = install_slow_notes(root / "server-venv")
    home, project = root / "home", root / "project"
    home.mkdir()
    project.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "MCPIPECHEKR_HOME"}}
    env.update({"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
    # Not on PATH: the agent CLIs a fix would need. The loop must not ask for them.
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if ".cache/agents" not in part
    )
    starts = home / ".slow-notes" / "starts.log"

    def count() -> int:
        return len(starts.read_text().split()) if starts.exists() else 0

    results = {}
    commands = dict(zip(("init", "propose", "loop"), newcomer_commands(script, home, 2), strict=True))
    for name, argv in commands.items():
        before = count()
        result = installed(BIN, project, env, *argv, timeout=600)
        results[name] = (result, count() - before)
    return {"project": project, "home": home, "script": script, "results": results}


def test_init_names_the_program_and_says_what_to_run_next(newcomer: dict[str, object]) -> None:
    project = newcomer["project"]
    result, starts = newcomer["results"]["init"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert starts == 0
    config = yaml.safe_load((project / "config.yaml").read_text())
    assert config["server"]["name"] == "slow-notes-mcp"
    assert config["server"]["env"] == {"HOME": str(newcomer["home"]), "SLOW_NOTES_START_S": "2"}
    assert "repo" not in config["server"]  # installed from a package: no checkout to commit fixes in
    assert config["fix"]["agent"] == "none"
    last = result.stdout.strip().splitlines()[-1]
    assert "tasks propose" in last and "doit baseline loop" in last


def test_propose_replaces_the_example_with_tasks_it_verified(newcomer: dict[str, object]) -> None:
    result, starts = newcomer["results"]["propose"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert starts == 2  # one server explores, a fresh one verifies
    tasks = yaml.safe_load((newcomer["project"] / "tasks.yaml").read_text())["tasks"]
    assert tasks and "example-task" not in {task["task_id"] for task in tasks}
    assert all(task.get("reference_calls") for task in tasks)


def test_the_loop_reaches_a_priced_bug_report_and_stops_at_the_review(newcomer: dict[str, object]) -> None:
    project = newcomer["project"]
    result, starts = newcomer["results"]["loop"]
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # stopped at the review: nobody answered it
    assert "evaluation only: server.repo is not set" in " ".join(output.split())
    assert "--export" in output and "--approve" not in output

    (run,) = list_runs(project / "runs")
    report = read_model(run.bug_report, BugReport)
    assert report.tasks and report.errored == []
    assert run.root.joinpath("report.html").exists()
    traces = [read_trace(path) for path in sorted(run.traces.glob("*.json"))]
    assert traces and all(trace.status == "completed" for trace in traces)

    # One start for the baseline and the tools snapshot together, then one per attempt.
    assert starts == 1 + len(traces)
    # The attempts ran side by side, on servers started before their agents asked.
    spans = []
    for journal in sorted((run.root / "journals").glob("*.jsonl")):
        records = read_journal(journal)
        started = next(record for record in records if record.event == "server_started")
        assert (started.detail or "").endswith("before the agent attached")
        spans.append((records[0].t, records[-1].t))
    assert max(sum(1 for begin, end in spans if begin <= t < end) for t, _ in spans) > 1


def test_doit_evaluate_traces_a_new_run_side_by_side(newcomer: dict[str, object]) -> None:
    """`doit evaluate` builds the traces it needs at --concurrency, as the loop does."""
    project = newcomer["project"]
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "MCPIPECHEKR_HOME"}}
    result = installed(
        BIN, project, env, "doit", "evaluate", "--new-run", "--concurrency", "3", timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run = list_runs(project / "runs")[-1]
    assert run.bug_report.exists() and run.root.joinpath("report.html").exists()
    journals = map(read_journal, (run.root / "journals").glob("*.jsonl"))
    spans = [(records[0].t, records[-1].t) for records in journals]
    assert len(spans) > 1
    assert max(sum(1 for begin, end in spans if begin <= t < end) for t, _ in spans) > 1
