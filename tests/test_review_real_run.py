"""The review of a real run: its `export`, and every table the commands print without a terminal.

One copy of the bundled example goes through `mcpipechekr baseline`, `run` and
`evaluate` on four tasks with long ids (the demo model's traces show the missing
date sort, the `fts.rank` error, unread fields and an agent that calls too much),
once for the module; each test works on a copy of that project. The commands
run as a user's script runs them: a subprocess whose stdin is /dev/null and
whose output is a pipe, with no $COLUMNS, so rich falls back to 80 columns.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from project import copy_project, mcpipechekr

from mcpipechekr.artifacts import BugReport, Manifest, RunDir, list_runs, read_model
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.review import Review
from mcpipechekr.report import write_report
from mcpipechekr.review.bugs import bugs_to_fix, fix_order
from mcpipechekr.review.decision import current_review

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_review_real_run")]

TASKS = [
    "find-first-email-ron-chinn",
    "list-office-move-emails-2024",
    "project-alpha-vendor-decision",
    "summarize-recent-project-alpha",
]
NOTE = "prefer a sort_order parameter over date windows"
SECRET = "sk-test-ISSUE-7c2e91ab44"


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

    def config(self, **changes: dict[str, object]) -> None:
        """Change sections of config.yaml (e.g. `fix={"agent": "none"}`)."""
        path = self.root / "config.yaml"
        config = yaml.safe_load(path.read_text())
        for section, values in changes.items():
            config[section] = {**config.get(section, {}), **values}
        path.write_text(yaml.safe_dump(config))


@pytest.fixture
def copied(evaluated: Evaluated, tmp_path: Path) -> Project:
    root = Path(shutil.copytree(evaluated.project, tmp_path / "project", symlinks=True))
    (run,) = list_runs(root / "runs")
    return Project(root, evaluated.env, run)


def review(project: Project, *args: str):  # type: ignore[no-untyped-def]
    return mcpipechekr(project.root, project.env, "review", project.run.run_id, *args)


# --- export -------------------------------------------------------------------------------------


def test_export_writes_one_issue_per_server_bug_and_records_the_decision(copied: Project) -> None:
    result = review(copied, "--export", "--annotate", NOTE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = copied.report
    exported = bugs_to_fix(report)
    agent = [bug for bug in fix_order(report) if bug.fixable_by == "agent"]
    assert exported and agent, "the demo's traces show both kinds"
    run = copied.run
    assert f"issues → runs/{run.run_id}/issues/ ({len(exported)} file(s)" in result.stdout
    assert sorted(path.name for path in run.issues.iterdir()) == sorted(f"{bug.id}.md" for bug in exported)

    for bug in exported:
        text = (run.issues / f"{bug.id}.md").read_text()
        assert text.startswith(f"# {bug.tool}: ")
        for line in (
            f"- Bug: `{bug.id}`",
            f"- Type: {bug.type.replace('_', ' ')}",
            f"- Severity: {bug.severity}",
            f"- Tool: `{bug.tool}`",
            f"- Trigger: {bug.trigger}",
            f"About {bug.token_cost_of_gap:,} tokens more than needed each time it happens",
            f"- {NOTE} (",
        ):
            assert line in text, (line, text)
        assert bug.observed in text and bug.expected in text
        for evidence in bug.evidence:
            steps = ", ".join(str(step) for step in evidence.steps)
            assert f"- task `{evidence.task_id}`: `{evidence.trace}`, step(s) {steps}" in text
            assert (run.root / evidence.trace).is_file()
        for criterion in bug.acceptance_criteria:
            assert f"- [ ] {criterion}" in text
        if bug.details:
            assert json.dumps(bug.details, indent=2, ensure_ascii=False) in text
        assert f"Found by MCPipeChekr in run `{run.run_id}`" in text

    decided = read_model(run.review, Review)
    assert decided.decision == "export" and decided.bug_ids == [bug.id for bug in exported]
    assert [note.text for note in decided.annotations] == [NOTE]
    assert current_review(run) == decided, "sealed, and bound to the bug report as it is"
    entry = read_model(run.manifest, Manifest).reviews[-1]
    assert (entry.decision, entry.bug_ids, entry.bug_report_hash) == (
        "export",
        decided.bug_ids,
        decided.bug_report_hash,
    )
    summary = run.session_summary.read_text()
    assert "review: export by" in summary
    assert f"exported as issues (issues/ in the run folder): `{exported[0].id}`" in summary

    page = write_report(run, copied.root / "after-review.html").read_text()
    assert f"export: {len(exported)} issue(s)" in page  # the HTML report's runs table says so too

    # the fix step has nothing to work on: an export is not an approval
    refused = mcpipechekr(copied.root, copied.env, "fix", run.run_id)
    assert refused.returncode == 2 and "chose `export` at the review" in refused.stdout + refused.stderr


def test_an_export_of_named_bugs_replaces_the_previous_one_and_never_takes_an_agent_bug(
    copied: Project,
) -> None:
    assert review(copied, "--export").returncode == 0
    report = copied.report
    first, *_ = bugs_to_fix(report)
    agent = next(bug for bug in report.bugs if bug.fixable_by == "agent")
    scoped = review(copied, "--export", "--bug", first.id)
    assert scoped.returncode == 0, scoped.stdout[-3000:] + scoped.stderr[-3000:]
    assert [path.name for path in copied.run.issues.iterdir()] == [f"{first.id}.md"]
    assert read_model(copied.run.review, Review).bug_ids == [first.id]

    refused = review(copied, "--export", "--bug", agent.id)
    assert refused.returncode == 2
    assert f"{agent.id!r} is not sent to the fix loop" in refused.stdout + refused.stderr
    assert "cannot be exported as an issue of the server" in refused.stdout + refused.stderr
    assert [path.name for path in copied.run.issues.iterdir()] == [f"{first.id}.md"]
    assert read_model(copied.run.review, Review).bug_ids == [first.id], "nothing was recorded"


def test_an_exported_issue_never_holds_a_secret(copied: Project) -> None:
    copied.config(server={"env": {"EMAILINDEX_TOKEN": "${ISSUE_SECRET}"}})
    raw = json.loads(copied.run.bug_report.read_bytes())
    bug = next(bug for bug in raw["bugs"] if bug["fixable_by"] == "server")
    bug["observed"] += f" (the server answered with its token {SECRET})"  # reached the report somehow
    copied.run.bug_report.write_text(json.dumps(raw))
    result = mcpipechekr(
        copied.root, {**copied.env, "ISSUE_SECRET": SECRET}, "review", copied.run.run_id, "--export"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = (copied.run.issues / f"{bug['id']}.md").read_text()
    assert "the server answered with its token ${ISSUE_SECRET}" in text
    assert not [path for path in copied.run.root.rglob("*.md") if SECRET in path.read_text()]


def test_with_fixing_off_the_hint_offers_export_instead_of_approve(copied: Project) -> None:
    shown = review(copied)
    assert shown.returncode == 2
    assert f"review {copied.run.run_id} --approve " in shown.stdout
    assert f"review {copied.run.run_id} --export " in shown.stdout

    copied.config(fix={"agent": "none"})
    shown = review(copied)
    assert shown.returncode == 2 and not copied.run.review.exists()
    assert "Fixing is off: fix.agent is `none`" in shown.stdout
    assert f"review {copied.run.run_id} --export " in shown.stdout
    assert "--approve" not in shown.stdout and "fix the approved bugs" not in shown.stdout


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
