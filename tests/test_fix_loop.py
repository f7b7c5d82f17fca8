"""Phase 3 on real parts: the example's workspace repository, the demo fixer, stand-in agents as scripts.

Every test works in its own copy of examples/emailindex made a git repository by
`prepare_repo`, with a bug report written through the artifact models and a
decision recorded through the review module, exactly as the pipeline does.
Health checks start the real example server.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import git
import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.artifacts import Bug, BugReport, RunDir, create_run_dir, read_model, write_model
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.cli import main
from mcpipechekr.config import Config, load_config
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.states import record_verification
from mcpipechekr.findings.lifecycle.store import load_findings
from mcpipechekr.findings.promotion.bugs import bug_finding_id, register_bug_report
from mcpipechekr.findings.server_identity import server_key
from mcpipechekr.fix import FixAgent, run_fix_loop
from mcpipechekr.review.decision import record_decision
from mcpipechekr.server.workspace import prepare_repo
from mcpipechekr.steps.fix import fix_step

pytestmark = pytest.mark.slow

GAP_ID = "GAP-no-date-sort-query-email-database"
FTS_ID = "BUG-no-such-column-fts-rank-query-email-database"
EFF_ID = "EFF-oversized-result-query-email-database"


def gap_bug(cost: int = 900) -> Bug:
    return Bug(
        id=GAP_ID,
        type="feature_gap",
        severity="high",
        source="analyzer",
        tool="query_email_database",
        task_id="find-first-email-ron-chinn",
        trigger="finding the earliest match by date with `query_email_database`",
        observed="the agent walked 4 date windows forward with `count_emails`, other arguments unchanged",
        expected="one call that lists the matches oldest first",
        acceptance_criteria=["add a sort_order parameter (date_asc/date_desc) to query_email_database"],
        token_cost_observed=cost + 400,
        token_cost_optimal=400,
        token_cost_of_gap=cost,
        task_ids=["find-first-email-ron-chinn"],
        details={"windows": ["..2012-12-31", "2013-01-01..2013-12-31"]},
    )


def fts_bug(cost: int = 600) -> Bug:
    return Bug(
        id=FTS_ID,
        type="bug",
        severity="high",
        source="analyzer",
        tool="query_email_database",
        trigger='calling `query_email_database` with {"fields":["date","subject"],"keywords":"office move"}',
        observed="error: database error: no such column: fts.rank; the agent retried without fields",
        expected="the projected fields of the matching emails",
        acceptance_criteria=["keywords combined with fields must return the projected fields"],
        token_cost_observed=cost + 300,
        token_cost_optimal=300,
        token_cost_of_gap=cost,
        details={"error_text": "database error: no such column: fts.rank"},
    )


def eff_bug(cost: int = 12000) -> Bug:
    return Bug(
        id=EFF_ID,
        type="efficiency",
        severity="medium",
        source="analyzer",
        tool="query_email_database",
        trigger="calling `query_email_database`",
        observed="1 result(s) of up to 16114 estimated tokens, over 2x the 4000-token budget",
        expected="results within the budget",
        token_cost_observed=cost + 4000,
        token_cost_optimal=4000,
        token_cost_of_gap=cost,
    )


def write_report(run: RunDir, bugs: list[Bug]) -> None:
    report = BugReport(
        run_id=run.run_id,
        phase1_provider="demo",
        evaluated_at=datetime(2026, 12, 2, 10, 0, tzinfo=UTC),
        bugs=bugs,
    )
    write_model(run.bug_report, report)


def make_project(
    root: Path, emailindex_dir: Path, db: Path, fix: dict, health_timeout: float = 20
) -> tuple[Config, git.Repo]:
    """config.yaml with the example's workspace repository under root/ws, seeded from the template."""
    config = {
        "server": {
            "name": "emailindex",
            "command": "python",
            "args": ["server.py"],
            "cwd": "ws/emailindex",
            "env": {"EMAILINDEX_DB": str(db)},
            "repo": "ws/emailindex",
            "repo_template": str(emailindex_dir),
            "health": {"timeout_s": health_timeout},
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        "fix": fix,
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    loaded = load_config(path, environ={})
    prepare_repo(loaded.server)
    return loaded, git.Repo(loaded.server.repo)


def log_messages(repo: git.Repo) -> list[str]:
    return [commit.message.strip() for commit in repo.iter_commits()]


def commit_files(repo: git.Repo, sha: str) -> list[str]:
    return sorted(repo.commit(sha).stats.files)


@pytest.fixture
def demo_project(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> tuple[Config, git.Repo, RunDir]:
    config, repo = make_project(
        tmp_path, emailindex_dir, emailindex_db, {"agent": "demo", "max_iterations": 2}
    )
    run = create_run_dir(config.paths.runs)
    write_report(run, [fts_bug(), eff_bug(), gap_bug()])
    return config, repo, run


# --- nothing happens without the approval of exactly this report -----------------------------------


def test_refuses_without_a_review(demo_project) -> None:
    config, repo, run = demo_project
    before = repo.head.commit.hexsha
    with pytest.raises(UserError, match=rf"has not been reviewed.*mcpipechekr review {run.run_id}"):
        run_fix_loop(config, run)
    assert repo.head.commit.hexsha == before and not run.fix_record.exists()
    assert not repo.is_dirty(untracked_files=True)


def test_refuses_an_exit_decision_and_a_stale_approval(demo_project) -> None:
    config, repo, run = demo_project
    record_decision(run, "exit")
    with pytest.raises(UserError, match="chose `exit`"):
        run_fix_loop(config, run)

    record_decision(run, "approve")
    write_report(run, [gap_bug()])  # re-evaluated after the approval: a different report
    with pytest.raises(UserError, match="approval .* was for a different bug report"):
        run_fix_loop(config, run)
    assert len(log_messages(repo)) == 1 and not run.fix_record.exists()


def test_refuses_a_repository_with_uncommitted_tracked_changes(demo_project) -> None:
    config, repo, run = demo_project
    record_decision(run, "approve")
    server_py = Path(repo.working_dir) / "server.py"
    server_py.write_text(server_py.read_text() + "# local edit\n")
    with pytest.raises(UserError, match=r"uncommitted changes to tracked files \(server\.py\)"):
        run_fix_loop(config, run)
    assert len(log_messages(repo)) == 1


# --- the demo fixer closes the loop on the example ----------------------------------------------------


def test_demo_fixer_commits_one_fix_per_matching_bug(demo_project) -> None:
    config, repo, run = demo_project
    root = Path(repo.working_dir)
    (root / "notes.txt").write_text("untracked before the fix loop\n")  # must stay out of every commit
    # how the model behaved, with the highest gap of all: evidence for the reviewer, nothing to fix
    agent = eff_bug(50_000).model_copy(
        update={"id": "EFF-too-many-calls-find-first-email-ron-chinn", "fixable_by": "agent"}
    )
    write_report(run, [fts_bug(), eff_bug(), gap_bug(), agent])
    record_decision(run, "approve", ["prefer a sort_order parameter"])

    record = run_fix_loop(config, run)

    # fix order: the most severe first, then the highest token_cost_of_gap; the oversized result has
    # no prepared patch; the agent bug is never given to the fixer
    assert [(bug.bug_id, bug.status) for bug in record.bugs] == [
        (GAP_ID, "committed"),
        (FTS_ID, "committed"),
        (EFF_ID, "unresolved"),
    ]
    assert not list((run.root / "fix").glob(f"{agent.id}*"))
    gap, fts, eff = record.bugs
    assert eff.iterations == 2 and eff.commit is None and eff.files_changed == []
    assert "no completion promise after 2 run(s)" in (eff.reason or "")
    assert "no prepared patch matches" in (eff.reason or "")
    assert gap.iterations == 1 and fts.iterations == 1
    assert log_messages(repo) == [f"fix: {FTS_ID}", f"fix: {GAP_ID}", "Initial import of emailindex"]
    assert [commit_files(repo, sha) for sha in record.commits] == [["server.py"], ["server.py"]]
    assert gap.files_changed == fts.files_changed == ["server.py"]
    assert record.commits == [c.hexsha for c in reversed(list(repo.iter_commits(max_count=2)))]
    source = (root / "server.py").read_text()
    assert 'SortOrder = Literal["relevance", "date_asc", "date_desc"]' in source
    assert not repo.is_dirty() and (root / "notes.txt").exists()
    assert "notes.txt" not in repo.git.ls_files()

    assert record.health is not None and record.health.healthy
    assert record.health.tools == 3 and record.health.after_commit == repo.head.commit.hexsha
    assert record.finished_at is not None and record.base_commit == repo.commit("HEAD~2").hexsha
    assert read_fix_record(run.fix_record) == record

    prompt = (run.root / gap.prompt).read_text()
    assert "prefer a sort_order parameter" in prompt
    assert "add a sort_order parameter (date_asc/date_desc) to query_email_database" in prompt
    assert gap.agent_command is not None and gap.agent_command.endswith(
        "demo_fixer.py " + str(run.root / gap.prompt)
    )
    assert "applied fixes/0001-add-sort-order.patch" in (run.root / gap.runs[0].log).read_text()

    with pytest.raises(UserError, match="already fixed"):
        run_fix_loop(config, run)
    again = run_fix_loop(config, run, again=True)  # the patches are in: nothing left to change
    assert {bug.status for bug in again.bugs} == {"unresolved"} and again.commits == []
    assert "already applied" in (again.bugs[0].reason or "") and again.health is None
    assert len(log_messages(repo)) == 3


def test_a_clean_report_needs_no_agent_and_changes_nothing(tmp_path, emailindex_dir, emailindex_db) -> None:
    config, repo = make_project(tmp_path, emailindex_dir, emailindex_db, {"agent": "opencode"})
    run = create_run_dir(config.paths.runs)
    write_report(run, [])
    record_decision(run, "approve")
    record = run_fix_loop(config, run)  # opencode needs a model, but with no bug it never runs
    assert record.bugs == [] and record.commits == [] and record.health is None
    assert record.finished_at is not None and read_fix_record(run.fix_record) == record
    assert len(log_messages(repo)) == 1


# --- stand-in agents: unresolved bugs are undone, agent commits folded, unhealthy fixes halt ---------------

AGENT = textwrap.dedent(
    """
    import subprocess, sys
    from pathlib import Path

    bug_id, counter, prompt = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]).read_text()
    if bug_id.startswith("EFF-"):  # never finishes: leaves a half-done edit and a new file
        with open("server.py", "a") as handle:
            handle.write("# half-done\\n")
        Path("scratch").mkdir(exist_ok=True)
        Path("scratch/new.txt").write_text("draft")
        print("still working on it")
    elif bug_id.startswith("BUG-"):  # finishes on its second run, and commits by itself
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        with open("README.md", "a") as handle:
            handle.write(f"run {runs}\\n")
        if runs == 2:
            subprocess.run(["git", "add", "README.md"], check=True)
            subprocess.run(
                ["git", "-c", "user.name=agent", "-c", "user.email=a@b", "commit", "-qm", "agent commit"],
                check=True,
            )
            print("done <promise>COMPLETE</promise>")
    elif bug_id.startswith("GAP-"):  # breaks the server at start; repairs it when told, unless stubborn
        source = Path("server.py").read_text()
        told = "## The server failed its health check" in prompt
        if told and not (counter.parent / "stubborn").exists():
            source = source.replace("raise SystemExit(3)\\n", "") + "# sorted by date now\\n"
        elif not told:
            source = "raise SystemExit(3)\\n" + source
        Path("server.py").write_text(source)
        if (counter.parent / "outside").is_dir():  # also breaks it where the loop cannot look
            (counter.parent / "outside" / "sitecustomize.py").write_text("raise SystemExit(4)\\n")
        print("<promise>COMPLETE</promise>")
    """
)


def shell_project(tmp_path: Path, emailindex_dir: Path, db: Path, health_timeout: float = 20):
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    counter = tmp_path / "counter"
    command = f"{{python}} {agent} {{bug_id}} {counter} {{prompt_file}}"
    # unconfined: the stand-in keeps its state beside the project, and one breaks the server from outside
    # the repository (what the sandbox stops; tests/test_fix_sandbox.py)
    fix = {"agent": "shell", "command": command, "max_iterations": 3, "sandbox": "off"}
    config, repo = make_project(tmp_path, emailindex_dir, db, fix, health_timeout)
    return config, repo, create_run_dir(config.paths.runs)


def test_unresolved_bug_is_undone_and_the_loop_goes_on(tmp_path, emailindex_dir, emailindex_db) -> None:
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db)
    root = Path(repo.working_dir)
    original = (root / "server.py").read_text()
    write_report(run, [eff_bug(5000).model_copy(update={"severity": "high"}), fts_bug(100)])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)

    eff, fts = record.bugs
    assert (eff.status, eff.iterations, eff.files_changed) == (
        "unresolved",
        3,
        ["scratch/new.txt", "server.py"],
    )
    assert (
        "no completion promise after 3 run(s)" in (eff.reason or "") and "still working on it" in eff.reason
    )
    assert (root / "server.py").read_text() == original and not (root / "scratch").exists()
    assert [run.promise for run in eff.runs] == [False, False, False]

    # the second run completes; the agent's own commit is folded into the harness's one
    assert (fts.status, fts.iterations, fts.files_changed) == ("committed", 2, ["README.md"])
    assert log_messages(repo) == [f"fix: {FTS_ID}", "Initial import of emailindex"]
    assert commit_files(repo, record.commits[0]) == ["README.md"]
    assert (root / "README.md").read_text().endswith("run 1\nrun 2\n")
    assert [run.promise for run in fts.runs] == [False, True]
    assert record.health is not None and record.health.healthy and not repo.is_dirty(untracked_files=True)


def test_a_change_that_breaks_the_server_is_never_committed_and_its_health_check_is_fed_back(
    tmp_path, emailindex_dir, emailindex_db
) -> None:
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db, health_timeout=10)
    write_report(run, [gap_bug(900), fts_bug(100)])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)

    gap, fts = record.bugs
    assert (gap.status, gap.iterations) == ("committed", 2)
    broken, repaired = gap.runs
    assert broken.health is not None and not broken.health.healthy
    assert "SyntaxError" in (broken.health.error or "")
    assert repaired.health is not None and repaired.health.healthy
    feedback = (run.root / (repaired.prompt or "")).read_text()
    assert "## The server failed its health check after the previous attempt" in feedback
    assert "SyntaxError" in feedback
    # the broken state never reached a commit: the one fix commit holds the repaired file
    assert log_messages(repo) == [f"fix: {FTS_ID}", f"fix: {GAP_ID}", "Initial import of emailindex"]
    source = repo.commit(gap.commit).tree["server.py"].data_stream.read().decode()
    assert "raise SystemExit(3)" not in source and "# sorted by date now" in source
    assert fts.status == "committed"
    assert record.health is not None and record.health.healthy and record.health.after_commit == fts.commit


def test_a_change_that_keeps_breaking_the_server_is_undone_and_the_loop_goes_on(
    tmp_path, emailindex_dir, emailindex_db
) -> None:
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db, health_timeout=10)
    (tmp_path / "stubborn").touch()
    root = Path(repo.working_dir)
    original = (root / "server.py").read_text()
    write_report(run, [gap_bug(900), fts_bug(100)])
    record_decision(run, "approve")

    record = run_fix_loop(config, run)

    gap, fts = record.bugs
    assert (gap.status, gap.iterations, gap.commit) == ("unresolved", 3, None)
    assert [bool(r.health and not r.health.healthy) for r in gap.runs] == [True, True, True]
    assert "the server failed its health check with the agent's change after 3 run(s)" in (gap.reason or "")
    assert (root / "server.py").read_text() == original
    assert (fts.status, fts.files_changed) == ("committed", ["README.md"])
    assert log_messages(repo) == [f"fix: {FTS_ID}", "Initial import of emailindex"]


def test_a_server_broken_beyond_the_agents_changes_halts_the_loop(
    tmp_path, emailindex_dir, emailindex_db
) -> None:
    """The agent also breaks what the loop cannot restore (a module outside the repository)."""
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db, health_timeout=10)
    (tmp_path / "stubborn").touch()
    outside = tmp_path / "outside"
    outside.mkdir()
    config.server.env["PYTHONPATH"] = str(outside)
    write_report(run, [gap_bug(900), fts_bug(100)])
    record_decision(run, "approve")

    with pytest.raises(ServerHalt) as info:
        run_fix_loop(config, run)

    head = repo.head.commit
    message = info.value.message
    assert f'at {head.hexsha[:7]} "Initial import of emailindex"' in message
    assert "with the fix agent's changes to the repository undone" in message
    assert "something the loop cannot undo is broken" in message and "init_import_site" in message
    record = read_fix_record(run.fix_record)
    assert [(bug.bug_id, bug.status) for bug in record.bugs] == [(GAP_ID, "unresolved"), (FTS_ID, "skipped")]
    assert record.health is not None and not record.health.healthy and record.finished_at is not None
    assert log_messages(repo) == ["Initial import of emailindex"] and not repo.is_dirty()


def test_the_fix_step_claims_the_commit_made_before_a_halt_and_claims_nothing_when_refused(
    tmp_path, emailindex_dir, emailindex_db, monkeypatch
) -> None:
    monkeypatch.delenv(HOME_ENV, raising=False)  # the config's paths.home is the findings home
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db, health_timeout=10)
    (tmp_path / "stubborn").touch()
    (tmp_path / "outside").mkdir()
    config.server.env["PYTHONPATH"] = str(tmp_path / "outside")
    write_report(run, [fts_bug(5000), gap_bug(900)])
    home = Home.resolve(config.paths.home)
    key = server_key(config.server)
    register_bug_report(home, read_model(run.bug_report, BugReport), server=key)
    record_decision(run, "approve")

    with pytest.raises(ServerHalt):
        fix_step(config, run)  # the first fix is committed, then the server does not start
    assert {f.bug_id: f.state for f in load_findings(home)} == {FTS_ID: "fix-claimed", GAP_ID: "open"}

    record_verification(
        home,
        bug_finding_id(FTS_ID, key),
        run_id="run-20990101-001",
        passed=True,
        binding="b",
        probe="p",
        origin="loop",
        server=key,
    )
    with pytest.raises(UserError, match="already fixed"):
        fix_step(config, run)  # an earlier invocation's commits are not claimed again
    assert {f.bug_id: (f.state, f.streak) for f in load_findings(home)}[FTS_ID] == ("verifying", 1)


def test_ctrl_c_during_a_bug_leaves_no_half_made_fix(tmp_path, emailindex_dir, emailindex_db, monkeypatch):
    config, repo, run = shell_project(tmp_path, emailindex_dir, emailindex_db)
    root = Path(repo.working_dir)
    original = (root / "server.py").read_text()
    write_report(run, [eff_bug()])
    record_decision(run, "approve")
    real_run = FixAgent.run

    def interrupted(self, *args, **kwargs):  # the agent's edits are on disk when Ctrl-C arrives
        real_run(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(FixAgent, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_fix_loop(config, run)
    assert (root / "server.py").read_text() == original and not (root / "scratch").exists()
    record = read_fix_record(run.fix_record)
    (entry,) = record.bugs
    assert (entry.status, entry.patch) == ("interrupted", f"fix/interrupted-{EFF_ID}.patch")
    patch = (run.root / entry.patch).read_text()
    assert "+# half-done" in patch and "scratch/new.txt" in patch
    assert record.in_progress is None and record.finished_at is None


# --- the command line -----------------------------------------------------------------------------------


def test_fix_command(demo_project) -> None:
    config, repo, run = demo_project
    assert config.source is not None
    args = ["fix", run.run_id, "--config", str(config.source)]
    cli = CliRunner()

    refused = cli.invoke(main, args, catch_exceptions=False)
    assert refused.exit_code == 2 and "has not been reviewed" in refused.output

    write_report(run, [eff_bug(), fts_bug()])
    record_decision(run, "approve")
    done = cli.invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 1, done.output  # the oversized result stays unresolved
    assert f"committed {repo.head.commit.hexsha[:7]} fix: {FTS_ID} after 1 run(s): server.py" in done.output
    assert "server healthy after the fixes: 3 tool(s)" in done.output
    assert f"wrote {run.fix_record}" in done.output
    assert log_messages(repo)[0] == f"fix: {FTS_ID}"

    twice = cli.invoke(main, args, catch_exceptions=False)
    assert twice.exit_code == 2 and "already fixed (1 commit(s))" in twice.output
    assert "--again" in twice.output

    help_text = cli.invoke(main, ["fix", "--help"]).output
    assert "--phase3-provider" in help_text and "<promise>COMPLETE</promise>" in help_text


def test_demo_agent_needs_its_script_in_the_repository(tmp_path, emailindex_dir, emailindex_db) -> None:
    config, repo = make_project(tmp_path, emailindex_dir, emailindex_db, {"agent": "demo"})
    repo.git.rm("-q", "demo_fixer.py")
    repo.git.commit("-qm", "drop the demo fixer")
    run = create_run_dir(config.paths.runs)
    write_report(run, [gap_bug()])
    record_decision(run, "approve")
    with pytest.raises(UserError, match="fix.agent `demo` runs demo_fixer.py from the server's repository"):
        run_fix_loop(config, run)
    assert len(log_messages(repo)) == 2 and not run.fix_record.exists()
