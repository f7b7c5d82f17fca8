"""The doit graph on the bundled example: targets, up-to-date checks, run identity, the project lock.

One project copy is built once (baseline, then the traces and evaluation of two
tasks) and the tests below change one input at a time, in file order, reading
doit's own report of what it ran (`.  name`) and what was up to date (`-- name`).
"""

from __future__ import annotations

import fcntl
import time
from pathlib import Path

import git
import pytest
from project import copy_project, doit, ran, up_to_date

from mcpipechekr.artifacts import BugReport, Manifest, list_runs, read_model

TASKS = ["find-first-email-ron-chinn", "count-dana-whitfield-2019"]
SELECT = [arg for task in TASKS for arg in ("--task", task)]

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_graph")]


@pytest.fixture(scope="module")
def env(emailindex_env: dict[str, str]) -> dict[str, str]:
    return {**emailindex_env, "COLUMNS": "200"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """baseline, then `doit trace evaluate` for two tasks: one run folder with everything built."""
    root = copy_project(tmp_path_factory.mktemp("graph"))
    baseline = doit(root, env, "baseline")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    first = doit(root, env, "trace", "evaluate", *SELECT)
    assert first.returncode == 0, first.stdout + first.stderr
    assert {f"trace:{task}__demo__r001" for task in TASKS} <= ran(first)
    return root


def test_doit_list_shows_the_user_facing_tasks(project: Path, env: dict[str, str]) -> None:
    listed = doit(project, env, "list")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    assert names == sorted(
        ["loop", "baseline", "lint", "check", "trace", "evaluate", "review", "fix", "report"]
    )
    assert all(len(line.split(maxsplit=1)) == 2 for line in listed.stdout.splitlines())  # each has its doc


def test_the_first_build_wrote_one_run_with_its_artifacts(project: Path) -> None:
    (run,) = list_runs(project / "runs")
    manifest = read_model(run.manifest, Manifest)
    assert manifest.status == "completed" and manifest.identity is not None
    assert manifest.parameters == {"task_ids": TASKS}
    assert sorted(p.stem for p in run.traces.glob("*.json")) == sorted(f"{t}__demo__r001" for t in TASKS)
    ids = [bug.id for bug in read_model(run.bug_report, BugReport).bugs]
    assert "GAP-no-date-sort-query-email-database" in ids
    workspace = git.Repo(project / ".mcpipechekr" / "workspace" / "emailindex")
    assert manifest.mcp_server_sha == workspace.head.commit.hexsha


def test_unchanged_inputs_rebuild_nothing(project: Path, env: dict[str, str]) -> None:
    started = time.perf_counter()
    again = doit(project, env, "trace", "evaluate", *SELECT)
    elapsed = time.perf_counter() - started
    assert again.returncode == 0, again.stdout + again.stderr
    assert ran(again) == set(), again.stdout
    assert {"lint", *(f"trace:{t}__demo__r001" for t in TASKS)} <= up_to_date(again)
    assert len(list_runs(project / "runs")) == 1
    print(f"no-op rebuild took {elapsed:.2f}s")  # the figure is in bench/; here only correctness


def test_editing_one_prompt_retraces_only_that_task(project: Path, env: dict[str, str]) -> None:
    tasks = project / "tasks.yaml"
    text = tasks.read_text()
    edited = text.replace(
        "How many emails did Dana Whitfield send in 2019?",
        "In 2019, how many emails did Dana Whitfield send?",
    )
    assert edited != text, "the count-dana-whitfield-2019 prompt moved; update this test"
    tasks.write_text(edited)
    again = doit(project, env, "trace", "evaluate", *SELECT)
    assert again.returncode == 0, again.stdout + again.stderr
    (run,) = list_runs(project / "runs")
    assert ran(again) == {"trace:count-dana-whitfield-2019__demo__r001", f"evaluate:{run.run_id}"}, (
        again.stdout
    )
    assert "trace:find-first-email-ron-chinn__demo__r001" in up_to_date(again)


def test_an_artifact_path_is_a_target(project: Path, env: dict[str, str]) -> None:
    (run,) = list_runs(project / "runs")
    run.bug_report.unlink()
    # a target path takes no flags: run-001 is then an earlier run, still a target of its own
    rebuilt = doit(project, env, str(run.bug_report.relative_to(project)))
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert ran(rebuilt) == {f"evaluate:{run.run_id}"}
    assert run.bug_report.exists()


def test_the_loop_without_a_terminal_stops_at_review_and_says_how_to_go_on(
    project: Path, env: dict[str, str]
) -> None:
    stopped = doit(project, env, "loop", *SELECT)
    output = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0
    (run,) = list_runs(project / "runs")
    assert f"mcpipechekr review {run.run_id} --approve" in output
    assert "Traceback" not in output
    assert not run.review.exists() and not run.fix_record.exists()  # nothing approved by default


def test_a_second_invocation_waits_for_nobody_and_refuses_clearly(project: Path, env: dict[str, str]) -> None:
    lock = project / ".mcpipechekr" / "project.lock"
    with open(lock, "a+") as handle:  # held by this process, described as another's (not doit's parent)
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.truncate(0)
        handle.write('{"pid": 1, "command": "doit loop", "since": "2026-01-02T03:04:05+00:00", "token": "t"}')
        handle.flush()
        refused = doit(project, env, "trace", *SELECT)
        listed = doit(project, env, "list")  # reading the graph needs no lock
    assert refused.returncode == 2
    assert "another mcpipechekr command is working in this project" in refused.stdout + refused.stderr
    assert "(pid 1: doit loop, since " in refused.stdout + refused.stderr
    assert listed.returncode == 0


def test_new_run_and_a_server_change_start_new_run_folders(project: Path, env: dict[str, str]) -> None:
    forced = doit(project, env, "trace", *SELECT, "--new-run")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    runs = list_runs(project / "runs")
    assert len(runs) == 2
    assert read_model(runs[1].manifest, Manifest).parameters["new_run"] is True

    workspace = project / ".mcpipechekr" / "workspace" / "emailindex"
    repo = git.Repo(workspace)
    (workspace / "NOTES.md").write_text("a change to the server's repository\n")
    repo.index.add(["NOTES.md"])
    repo.index.commit("docs: notes")
    changed = doit(project, env, "trace", *SELECT)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    runs = list_runs(project / "runs")
    assert len(runs) == 3
    assert read_model(runs[2].manifest, Manifest).mcp_server_sha == repo.head.commit.hexsha
    assert runs[2].tools.exists() and {"lint", *(f"trace:{t}__demo__r001" for t in TASKS)} <= ran(changed)
