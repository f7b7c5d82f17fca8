"""Attacks on the review gate: getting the fix loop to work on bugs nobody approved.

Each test sets up a project with the emailindex example as the server's
repository, a bug report with three bugs the server can fix, and a fix agent
that is a script recording every bug id it is run for (and making a one-line
change, so a fix is committed the ordinary way). A review counts only when
`mcpipechekr review` recorded it; the attacks write, widen or copy review.json
by other means and then run the fix loop, which must refuse before the agent
runs at all.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr.artifacts import (
    Bug,
    BugReport,
    Manifest,
    PhaseProviders,
    Review,
    RunDir,
    ServerRef,
    read_model,
    write_model,
)
from mcpipechekr.cli import main
from mcpipechekr.config import Config, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.server.workspace import prepare_repo

pytestmark = pytest.mark.slow

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
RUN_ID = "run-20261202-001"
SORT = "BUG-wrong-date-order-query-email-database"
FTS = "BUG-no-such-column-fts-rank-query-email-database"
SIZE = "BUG-missing-subject-query-email-database"

AGENT = textwrap.dedent(
    """\
    import sys
    from pathlib import Path

    bug_id, calls = sys.argv[1], Path(sys.argv[2])
    with calls.open("a") as handle:
        handle.write(bug_id + "\\n")
    with Path("server.py").open("a") as handle:
        handle.write(f"# {bug_id}\\n")
    print("<promise>COMPLETE</promise>")
    """
)


def bug(bug_id: str, gap: int) -> Bug:
    return Bug(
        id=bug_id,
        type="bug",
        severity="high",
        source="analyzer",
        tool="query_email_database",
        trigger="calling `query_email_database`",
        observed="a wrong answer",
        expected="the right answer",
        token_cost_observed=gap + 100,
        token_cost_optimal=100,
        token_cost_of_gap=gap,
    )


class Project:
    """A project folder whose fix agent records, in `calls`, every bug id it is run for."""

    def __init__(self, root: Path, emailindex_dir: Path, db: Path) -> None:
        self.root = root
        root.mkdir()
        self.calls = root / "agent-calls"
        agent = root / "agent.py"
        agent.write_text(AGENT)
        config = {
            "server": {
                "name": "emailindex",
                "command": "python",
                "args": ["server.py"],
                "cwd": "ws/emailindex",
                "env": {"EMAILINDEX_DB": str(db)},
                "repo": "ws/emailindex",
                "repo_template": str(emailindex_dir),
            },
            "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
            "fix": {
                "agent": "shell",
                "command": f"{{python}} {agent} {{bug_id}} {self.calls}",
                "max_iterations": 1,
                # the stand-in agent records its calls outside the repository, which the sandbox
                # refuses; what is tested here is which bugs reach the agent, not its confinement
                "sandbox": "off",
            },
        }
        self.config_path = root / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.config: Config = load_config(self.config_path, environ={})
        prepare_repo(self.config.server)
        self.run = RunDir(Path(self.config.paths.runs) / RUN_ID)
        self.run.root.mkdir(parents=True)
        write_model(
            self.run.bug_report,
            BugReport(
                run_id=self.run.run_id,
                phase1_provider="demo",
                evaluated_at=T0,
                bugs=[bug(SORT, 900), bug(FTS, 600), bug(SIZE, 300)],
            ),
        )
        write_model(self.run.manifest, manifest(self.run.run_id))

    def review(self, *args: str) -> str:
        """`mcpipechekr review RUN ARGS` for this project; returns its output, asserting it succeeded."""
        result = CliRunner().invoke(
            main,
            ["review", self.run.run_id, *args, "--config", str(self.config_path)],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        return result.output

    def agent_calls(self) -> list[str]:
        return self.calls.read_text().split() if self.calls.exists() else []

    def fix_is_refused(self) -> str:
        """Run the fix loop, which must refuse before any agent runs; returns the refusal."""
        with pytest.raises(UserError) as refused:
            run_fix_loop(self.config, self.run)
        assert self.agent_calls() == [] and not self.run.fix_record.exists()
        return refused.value.message


def manifest(run_id: str) -> Manifest:
    return Manifest(
        run_id=run_id,
        started_at=T0,
        harness_version="0.1.0",
        task_file_hash="sha256:" + "0" * 64,
        providers=PhaseProviders(phase1="demo"),
        config_hash="sha256:" + "1" * 64,
        server=ServerRef(name="emailindex", transport="stdio", command="python server.py"),
    ).finished("completed", at=T0)


@pytest.fixture
def project(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path) -> Project:
    return Project(tmp_path / "project", emailindex_dir, emailindex_db)


def edit_review(run: RunDir, **changes: object) -> None:
    """Change review.json's fields as an editor would: the JSON text, nothing else."""
    data = json.loads(run.review.read_text())
    data.update(changes)
    run.review.write_text(json.dumps(data, indent=2))


def test_an_approval_scoped_to_one_bug_fixes_that_bug_alone(project: Project) -> None:
    output = project.review("--approve", "--bug", FTS)
    assert "approved 1 bug(s) for the fix loop" in output

    record = run_fix_loop(project.config, project.run)

    assert project.agent_calls() == [FTS]
    assert [(entry.bug_id, entry.status) for entry in record.bugs] == [(FTS, "committed")]


def test_approving_a_bug_the_report_does_not_have_is_refused(project: Project) -> None:
    result = CliRunner().invoke(
        main,
        [
            "review",
            project.run.run_id,
            "--approve",
            "--bug",
            FTS,
            "--bug",
            "BUG-invented",
            "--config",
            str(project.config_path),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert "'BUG-invented' is not a bug of this run's bug report" in result.output
    assert not project.run.review.exists()


def test_a_hand_written_approval_of_the_right_report_is_refused(project: Project) -> None:
    write_model(
        project.run.review,
        Review(
            run_id=project.run.run_id,
            decision="approve",
            decided_by="mallory",
            decided_at=T0,
            bug_report_hash=sha256_bytes(project.run.bug_report.read_bytes()),
            bug_ids=[SORT, FTS, SIZE],
        ),
    )
    message = project.fix_is_refused()
    assert "not a review recorded by `mcpipechekr review`" in message and "no seal" in message
    assert f"mcpipechekr review {project.run.run_id} --approve [--bug ID ...]" in message


def test_an_approval_widened_by_hand_is_refused(project: Project) -> None:
    project.review("--approve", "--bug", FTS)
    edit_review(project.run, bug_ids=[SORT, FTS, SIZE])
    message = project.fix_is_refused()
    assert "its seal does not match its content" in message


def test_an_exit_turned_into_an_approval_by_hand_is_refused(project: Project) -> None:
    project.review("--exit")
    edit_review(project.run, decision="approve", bug_ids=[SORT, FTS, SIZE])
    message = project.fix_is_refused()
    assert "its seal does not match its content" in message


def test_an_approval_copied_from_another_project_is_refused(
    tmp_path: Path, project: Project, emailindex_dir: Path, emailindex_db: Path
) -> None:
    project.review("--exit")
    other = Project(tmp_path / "other", emailindex_dir, emailindex_db)
    other.review("--approve")
    shutil.copyfile(other.run.review, project.run.review)
    message = project.fix_is_refused()
    assert "its seal does not match its content" in message


def test_the_manifest_names_who_approved_which_bugs(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, "dana")
    project.review("--approve", "--bug", SIZE, "--bug", SORT)

    review = read_model(project.run.review, Review)
    (entry,) = read_model(project.run.manifest, Manifest).reviews
    assert (entry.decision, entry.decided_by, entry.bug_ids) == ("approve", "dana", [SORT, SIZE])
    assert entry.bug_report_hash == sha256_bytes(project.run.bug_report.read_bytes())
    assert entry.decided_at == review.decided_at
