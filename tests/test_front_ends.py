"""One library, two front ends: the same project through `mcpipechekr` commands and through doit targets.

Two copies of the bundled example, each with its own findings home
($MCPIPECHEKR_HOME): one goes through `mcpipechekr baseline`, `run`,
`evaluate`, `review --approve` and `fix`; the other through `doit baseline`,
`doit trace evaluate`, `mcpipechekr review --approve` (a person decides) and
`doit review fix`. Both must end with the same artifacts in their run
folder, the same bugs, the same fixes, and the same findings home: the same
call records, the same findings in the same states. A front end that skips a
hand-off (call evidence after a trace, bugs as findings after an evaluation,
the claim after a fix commit) leaves its home different and fails this test.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from project import copy_project, doit, mcpipechekr, ran

from mcpipechekr.artifacts import BugReport, Manifest, RunDir, list_runs, read_model
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.index_db import open_index
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.store import load_findings

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_front_ends")]

TASKS = ["find-first-email-ron-chinn", "list-office-move-emails-2024"]
SELECT = [arg for task in TASKS for arg in ("--task", task)]
LINT_GATE = "tef_report.json"
"""Made only by doit: its trace targets depend on the lint gate; `mcpipechekr run` is Phase 1 alone."""


@dataclass(frozen=True)
class Ended:
    """A project after one front end went through the run."""

    project: Path
    home: Home
    run: RunDir


def succeeded(result: subprocess.CompletedProcess[str], *codes: int) -> subprocess.CompletedProcess[str]:
    assert result.returncode in (codes or (0,)), result.stdout[-3000:] + result.stderr[-3000:]
    return result


def project_with_home(tmp_path_factory: pytest.TempPathFactory, name: str, env: dict[str, str]):
    project = copy_project(tmp_path_factory.mktemp(name))
    home = project / "findings-home"
    return project, Home.resolve(home), {**env, HOME_ENV: str(home), "COLUMNS": "200"}


def only_run(project: Path) -> RunDir:
    (run,) = list_runs(project / "runs")
    return run


@pytest.fixture(scope="module")
def through_cli(tmp_path_factory: pytest.TempPathFactory, emailindex_env: dict[str, str]) -> Ended:
    project, home, env = project_with_home(tmp_path_factory, "cli", emailindex_env)
    succeeded(mcpipechekr(project, env, "baseline", *SELECT))
    succeeded(mcpipechekr(project, env, "run", *SELECT))
    succeeded(mcpipechekr(project, env, "evaluate"))
    succeeded(mcpipechekr(project, env, "review", "--approve"))
    succeeded(mcpipechekr(project, env, "fix"), 0, 1)  # 1: a bug the demo fixer has no patch for
    return Ended(project, home, only_run(project))


@pytest.fixture(scope="module")
def through_doit(tmp_path_factory: pytest.TempPathFactory, emailindex_env: dict[str, str]) -> Ended:
    project, home, env = project_with_home(tmp_path_factory, "doit", emailindex_env)
    succeeded(doit(project, env, "baseline", *SELECT))
    traced = succeeded(doit(project, env, "trace", "evaluate", *SELECT))
    assert {f"trace:{task}__demo__r001" for task in TASKS} <= ran(traced)
    succeeded(mcpipechekr(project, env, "review", "--approve"))
    fixed = succeeded(doit(project, env, "review", "fix", *SELECT))
    assert {"review", "fix"} <= ran(fixed), fixed.stdout  # the review target finds the decision made
    assert re.search(r"approved \d+ bug\(s\) for the fix loop", fixed.stdout), fixed.stdout
    return Ended(project, home, only_run(project))


def artifacts(run: RunDir) -> set[str]:
    return {str(path.relative_to(run.root)) for path in run.root.rglob("*") if path.is_file()}


def test_the_run_folders_hold_the_same_artifacts(through_cli: Ended, through_doit: Ended) -> None:
    made = artifacts(through_cli.run)
    assert {"manifest.json", "tools.json", "bug_report.json", "review.json", "fix.json"} <= made
    assert any(name.startswith("traces/") for name in made) and any(name.startswith("fix/") for name in made)
    assert LINT_GATE in artifacts(through_doit.run) and LINT_GATE not in made
    assert made == artifacts(through_doit.run) - {LINT_GATE}
    for ended in (through_cli, through_doit):
        manifest = read_model(ended.run.manifest, Manifest)
        assert manifest.status == "completed", manifest.status_reason
        assert manifest.task_ids == TASKS and manifest.providers.phase1 == "demo"


def test_the_same_bugs_and_the_same_fixes(through_cli: Ended, through_doit: Ended) -> None:
    def bugs(ended: Ended) -> list[tuple[str, str]]:
        return [(bug.id, bug.type) for bug in read_model(ended.run.bug_report, BugReport).bugs]

    def fixes(ended: Ended) -> list[tuple[str, str, list[str]]]:
        record = read_model(ended.run.fix_record, FixRecord)
        return [(bug.bug_id, bug.status, bug.files_changed) for bug in record.bugs]

    assert bugs(through_cli) == bugs(through_doit)
    assert fixes(through_cli) == fixes(through_doit)
    assert any(status == "committed" for _, status, _ in fixes(through_cli))


def findings(home: Home) -> list[tuple[str, str | None, str, int]]:
    return sorted((f.id, f.bug_id, f.state, f.streak) for f in load_findings(home))


def test_the_same_findings_in_the_same_states(through_cli: Ended, through_doit: Ended) -> None:
    found = findings(through_cli.home)
    committed = {
        bug.bug_id
        for bug in read_model(through_cli.run.fix_record, FixRecord).bugs
        if bug.status == "committed"
    }
    bug_ids = {bug.id for bug in read_model(through_cli.run.bug_report, BugReport).bugs}
    assert {bug_id for _, bug_id, _, _ in found} == bug_ids, "every bug of the evaluation is a finding"
    assert {bug_id for _, bug_id, state, _ in found if state == "fix-claimed"} == committed
    assert found == findings(through_doit.home)


def calls(ended: Ended) -> list[tuple[str, int, str, str, str]]:
    """The call records in the home, their sessions named without the run id (it carries the date)."""
    refresh_index(ended.home)
    with contextlib.closing(open_index(ended.home)) as index:
        rows = index.execute("SELECT session, seq, tool, outcome, arg_shape FROM calls").fetchall()
    run_id = re.escape(ended.run.run_id)
    return sorted((re.sub(f"^{run_id}/", "RUN/", session), *rest) for session, *rest in rows)


def test_the_same_call_records_each_attempt_handed_over_once(through_cli: Ended, through_doit: Ended) -> None:
    recorded = calls(through_cli)
    assert {session for session, *_ in recorded} == {f"RUN/{task}__demo__r001" for task in TASKS}
    assert recorded == calls(through_doit)
    for ended in (through_cli, through_doit):  # one journal per attempt: handed over as it finished, once
        assert len(list(ended.home.journals.glob("*.jsonl"))) == len(TASKS)
