"""The review of a real run, and every table the commands print without a terminal.

One copy of the bundled example goes through `mcpipechekr baseline`, `run` and
`evaluate` on four tasks with long ids (the demo model's traces show the missing
date sort, the `fts.rank` error, unread fields and an agent that calls too much),
once for the module; each test works on a copy of that project. The commands
run as a user's script runs them: a subprocess whose stdin is /dev/null and
whose output is a pipe, with no $COLUMNS, so rich falls back to 80 columns.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from project import copy_project, mcpipechekr

from mcpipechekr.artifacts import BugReport, RunDir, list_runs, read_model
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.review import fix_order

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_review_real_run")]

TASKS = [
    "find-first-email-ron-chinn",
    "list-office-move-emails-2024",
    "project-alpha-vendor-decision",
    "summarize-recent-project-alpha",
]


@dataclass(frozen=True)
class Evaluated:
    """The project after baseline, run and evaluate, the environment its commands ran in, `run`'s output."""

    project: Path
    env: dict[str, str]
    run_output: str


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory, emailindex_env: dict[str, str]) -> Evaluated:
    project = copy_project(tmp_path_factory.mktemp("evaluated"))
    env = {name: value for name, value in emailindex_env.items() if name not in ("COLUMNS", "LINES")}
    select = [arg for task in TASKS for arg in ("--task", task)]
    outputs = {}
    for args in (["baseline", *select], ["run", *select], ["evaluate"]):
        result = mcpipechekr(project, env, *args)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        outputs[args[0]] = result.stdout
    return Evaluated(project, env, outputs["run"])


@dataclass(frozen=True)
class Project:
    """A copy of the evaluated project for one test, and its run."""

    root: Path
    env: dict[str, str]
    run: RunDir

    @property
    def report(self) -> BugReport:
        return read_model(self.run.bug_report, BugReport)


@pytest.fixture
def copied(evaluated: Evaluated, tmp_path: Path) -> Project:
    root = Path(shutil.copytree(evaluated.project, tmp_path / "project", symlinks=True))
    (run,) = list_runs(root / "runs")
    return Project(root, evaluated.env, run)


def review(project: Project, *args: str):  # type: ignore[no-untyped-def]
    return mcpipechekr(project.root, project.env, "review", project.run.run_id, *args)


# --- tables without a terminal ------------------------------------------------------------------


def cut_words(output: str) -> list[str]:
    """Words rich cut short with an ellipsis (`Wils…`, `owne…`)."""
    return re.findall(r"[\w@^()%-]+…", output)


def test_the_review_prints_every_table_readable_without_a_terminal(copied: Project) -> None:
    shown = review(copied)
    assert shown.returncode == 2, shown.stderr[-3000:]
    output = shown.stdout
    report = copied.report
    assert cut_words(output) == [], cut_words(output)
    lines = output.splitlines()
    # the review's bug table: each bug's row begins with its number and its whole id
    for number, bug in enumerate(fix_order(report), start=1):
        assert any(re.match(rf"^ *{number} +{re.escape(bug.id)}( |$)", line) for line in lines), bug.id
    # the narrative's bug table: a row per bug, its id whole, then its type
    for bug in report.bugs:
        assert any(re.match(rf"^ *{re.escape(bug.id)} +{bug.type} ", line) for line in lines), bug.id
    # the narrative's per-task table: every header whole on one line, a row per task with its whole id
    headers = ["task", "provider", "success", "Wilson 95%", "pass@k", "pass^k", "calls (min)", "call ratio"]
    headers += ["tokens (source)", "efficiency"]
    assert any(all(header in line for header in headers) for line in lines)
    for stats in report.tasks:
        assert any(re.match(rf"^ *{re.escape(stats.task_id)} +demo ", line) for line in lines), stats.task_id


def test_run_and_fix_print_their_tables_readable_without_a_terminal(
    evaluated: Evaluated, copied: Project
) -> None:
    assert cut_words(evaluated.run_output) == [], cut_words(evaluated.run_output)
    for task in TASKS:
        assert re.search(rf"^ *{re.escape(task)} +demo ", evaluated.run_output, re.M), task

    assert review(copied, "--approve").returncode == 0
    fixed = mcpipechekr(copied.root, copied.env, "fix", copied.run.run_id)
    assert fixed.returncode in (0, 1), fixed.stdout[-3000:] + fixed.stderr[-3000:]
    assert cut_words(fixed.stdout) == [], cut_words(fixed.stdout)
    for entry in read_model(copied.run.fix_record, FixRecord).bugs:
        assert re.search(rf"{re.escape(entry.bug_id)} +. +{entry.status} ", fixed.stdout), entry.bug_id
