"""The review checkpoint: approvals tied to the report's bytes, the prompt, the CLI, the session summary."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import git
import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console
from trace_builder import make_trace, say

from mcpipechekr._util.commands import script_command
from mcpipechekr._util.hashing import sha256_file
from mcpipechekr.artifacts import (
    Bug,
    BugReport,
    Evidence,
    Manifest,
    PhaseProviders,
    Review,
    RunDir,
    ServerRef,
    TaskStats,
    read_model,
    write_model,
)
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.narrative import render_narrative
from mcpipechekr.review.bugs import approved_bugs, bugs_to_fix, fix_order
from mcpipechekr.review.decision import (
    approved_report,
    current_review,
    record_decision,
    require_approval,
    review_key_path,
)
from mcpipechekr.review.prompt import PROMPT, continue_hint, interactive_review, review_checkpoint
from mcpipechekr.session_summary import write_session_summary

RUN_ID = "run-20261202-001"
NEXT_RUN_ID = "run-20261202-002"
T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def make_bug(bug_id: str, bug_type: str, gap: int, *, tool: str, trigger: str, occurrences: int = 1) -> Bug:
    return Bug(
        id=bug_id,
        type=bug_type,  # type: ignore[arg-type]
        severity="high" if bug_type == "bug" else "medium",
        source="analyzer",
        tool=tool,
        task_id="find-first-email-ron-chinn",
        trigger=trigger,
        observed=f"{tool} cost {gap} tokens more than needed",
        expected="one call",
        acceptance_criteria=[f"{tool} answers in one call"],
        token_cost_observed=gap + 400,
        token_cost_optimal=400,
        token_cost_of_gap=gap,
        occurrences=occurrences,
        task_ids=["find-first-email-ron-chinn"],
        evidence=[
            Evidence(
                task_id="find-first-email-ron-chinn",
                trace="traces/find-first-email-ron-chinn__demo__r001.json",
                steps=[0, 2],
            )
        ],
    )


# Deliberately not in fix order: the review sorts them, highest gap first.
SORT_GAP = make_bug(
    "GAP-no-date-sort-query-email-database",
    "feature_gap",
    1_850,
    tool="query_email_database",
    trigger="finding the earliest match by date with `query_email_database`",
    occurrences=2,
)
FTS_RANK = make_bug(
    "BUG-no-such-column-fts-rank-query-email-database",
    "bug",
    1_164,
    tool="query_email_database",
    trigger='calling `query_email_database` with {"keywords": "office move", "sort": "rank"}',
)
OVERSIZED = make_bug(
    "EFF-oversized-result-query-email-database",
    "efficiency",
    12_114,
    tool="query_email_database",
    trigger="calling `query_email_database` [without fields]",
)


def task_stats(task_id: str, runs: int, calls: float, tokens: float) -> TaskStats:
    return TaskStats(
        task_id=task_id,
        runs=runs,
        successes=runs,
        success_rate=1.0,
        wilson_low=0.5,
        wilson_high=1.0,
        pass_at_k=1.0,
        pass_hat_k=1.0,
        provider="demo",
        mean_calls=calls,
        mean_tokens_observed=tokens,
        tokens_source="estimated",
    )


def make_report(run_id: str, bugs: list[Bug], tasks: list[TaskStats] | None = None) -> BugReport:
    return BugReport(
        run_id=run_id,
        phase1_provider="demo",
        evaluated_at=T0,
        bugs=bugs,
        tasks=tasks if tasks is not None else [task_stats("find-first-email-ron-chinn", 2, 5.0, 1_900.0)],
    )


def write_run(runs: Path, run_id: str, bugs: list[Bug], tasks: list[TaskStats] | None = None) -> RunDir:
    """A run folder as Phase 2 leaves it: manifest, a trace per planned attempt, bug report, narrative."""
    run = RunDir(runs / run_id)
    run.root.mkdir(parents=True)
    report = make_report(run_id, bugs, tasks)
    write_model(run.bug_report, report)
    run.phase2_narrative.write_text(render_narrative(report, traces=2), encoding="utf-8")
    manifest = Manifest(
        run_id=run_id,
        started_at=T0,
        harness_version="0.1.0",
        mcp_server_sha="0123456789abcdef0123",
        task_file_hash="sha256:" + "0" * 64,
        providers=PhaseProviders(phase1="demo", phase2="demo", phase3="demo"),
        config_hash="sha256:" + "1" * 64,
        server=ServerRef(name="emailindex", transport="stdio", command="python server.py"),
        task_ids=["find-first-email-ron-chinn", "latest-email-from-ron-chinn"],
    ).finished("completed", at=T0 + timedelta(minutes=2))
    write_model(run.manifest, manifest)
    for task_id in manifest.task_ids:
        write_trace(run, make_trace(task_id, [say("done")]))
    return run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with a config whose runs/ holds one evaluated run, and the server's repository."""
    config = {
        "server": {"command": "python", "args": ["server.py"], "repo": "server"},
        "paths": {"runs": "runs"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    git.Repo.init(tmp_path / "server", initial_branch="main").close()
    write_run(tmp_path / "runs", RUN_ID, [SORT_GAP, FTS_RANK, OVERSIZED])
    return tmp_path


@pytest.fixture
def run_dir(project: Path) -> RunDir:
    return RunDir(project / "runs" / RUN_ID)


def scripted(*lines: str) -> tuple[Callable[[str], str], list[str]]:
    """An input function answering the prompt with ``lines``, then end of input; records the prompts."""
    queue: Iterator[str] = iter(lines)
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return read, prompts


def recording_console(width: int = 100) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, highlight=False, soft_wrap=True, color_system=None), out


def reevaluate(run: RunDir, bugs: list[Bug]) -> None:
    """Rewrite the bug report as a new evaluation would."""
    write_model(
        run.bug_report,
        make_report(run.run_id, bugs).model_copy(update={"evaluated_at": T0 + timedelta(hours=1)}),
    )


# --- require_approval ---------------------------------------------------------------------------


def test_fix_is_refused_before_any_review(run_dir: RunDir) -> None:
    with pytest.raises(UserError) as info:
        require_approval(run_dir)
    message = info.value.message
    assert "has not been reviewed" in message
    assert f"mcpipechekr review {RUN_ID}" in message and "--approve" in message
    assert not run_dir.review.exists()


def test_fix_is_refused_without_a_bug_report(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "runs" / RUN_ID)
    run.root.mkdir(parents=True)
    with pytest.raises(UserError) as info:
        require_approval(run)
    assert "no bug report yet" in info.value.message
    assert f"mcpipechekr evaluate {RUN_ID}" in info.value.message


def test_an_approval_covers_the_exact_bytes_of_the_bug_report(run_dir: RunDir) -> None:
    review = record_decision(run_dir, "approve", ["prefer a sort_order parameter"], by="dana")
    assert review.bug_report_hash == sha256_file(run_dir.bug_report)
    # the most severe first, then the highest token_cost_of_gap
    assert review.bug_ids == [FTS_RANK.id, OVERSIZED.id, SORT_GAP.id]
    approved = require_approval(run_dir)
    assert approved == read_model(run_dir.review, Review) == review
    assert [note.text for note in approved.annotations] == ["prefer a sort_order parameter"]
    assert approved.annotations[0].by == approved.decided_by == "dana"


def test_an_approval_of_a_stale_bug_report_is_refused(run_dir: RunDir) -> None:
    record_decision(run_dir, "approve")
    approved_hash = read_model(run_dir.review, Review).bug_report_hash
    reevaluate(run_dir, [OVERSIZED, FTS_RANK])  # a new evaluation replaces the report that was approved
    with pytest.raises(UserError) as info:
        require_approval(run_dir)
    message = info.value.message
    assert "was for a different bug report" in message
    assert approved_hash.removeprefix("sha256:")[:12] in message
    assert sha256_file(run_dir.bug_report).removeprefix("sha256:")[:12] in message
    assert f"mcpipechekr review {RUN_ID}" in message
    assert current_review(run_dir) is None
    # reviewing the new report makes it approvable again
    record_decision(run_dir, "approve")
    assert require_approval(run_dir).bug_ids == [FTS_RANK.id, OVERSIZED.id]


def test_even_one_changed_byte_makes_the_approval_stale(run_dir: RunDir) -> None:
    record_decision(run_dir, "approve")
    run_dir.bug_report.write_bytes(run_dir.bug_report.read_bytes() + b"\n")  # same content, other bytes
    with pytest.raises(UserError, match="has changed since"):
        require_approval(run_dir)


def test_an_exit_decision_is_not_an_approval(run_dir: RunDir) -> None:
    record_decision(run_dir, "exit", by="dana")
    with pytest.raises(UserError) as info:
        require_approval(run_dir)
    assert "dana chose `exit`" in info.value.message
    assert f"mcpipechekr review {RUN_ID} --approve" in info.value.message


def test_a_review_copied_from_another_run_is_refused(project: Path, run_dir: RunDir) -> None:
    other = write_run(project / "runs", NEXT_RUN_ID, [SORT_GAP, FTS_RANK, OVERSIZED])
    record_decision(run_dir, "approve")
    other.review.write_bytes(run_dir.review.read_bytes())
    with pytest.raises(UserError) as info:
        require_approval(other)
    assert f"a review of {RUN_ID}, not of {NEXT_RUN_ID}" in info.value.message


def test_a_damaged_review_file_names_the_field(run_dir: RunDir) -> None:
    record_decision(run_dir, "approve")
    run_dir.review.write_text(run_dir.review.read_text().replace('"approve"', '"yes"'))
    with pytest.raises(UserError) as info:
        require_approval(run_dir)
    assert str(run_dir.review) in info.value.message and "field `decision`" in info.value.message


def test_a_report_changed_while_on_screen_records_nothing(run_dir: RunDir) -> None:
    shown = sha256_file(run_dir.bug_report)
    reevaluate(run_dir, [FTS_RANK])
    with pytest.raises(UserError, match="changed while it was being reviewed"):
        record_decision(run_dir, "approve", bug_report_hash=shown)
    assert not run_dir.review.exists()


def test_annotations_carry_over_to_a_new_decision_on_the_same_report_only(run_dir: RunDir) -> None:
    record_decision(run_dir, "exit", ["prefer a sort_order parameter"], by="dana")
    review = record_decision(run_dir, "approve", ["keep limit", "prefer a sort_order parameter"], by="sam")
    assert [(note.text, note.by) for note in review.annotations] == [
        ("prefer a sort_order parameter", "dana"),
        ("keep limit", "sam"),
    ]
    reevaluate(run_dir, [FTS_RANK])
    fresh = record_decision(run_dir, "approve", by="sam")
    assert fresh.annotations == []


def test_blank_annotations_are_refused(run_dir: RunDir) -> None:
    with pytest.raises(UserError, match="needs text"):
        record_decision(run_dir, "approve", ["   "])
    assert not run_dir.review.exists()


# --- the prompt ---------------------------------------------------------------------------------


def test_interactive_review_shows_the_report_takes_annotations_and_approves(run_dir: RunDir) -> None:
    console, out = recording_console(width=140)
    read, prompts = scripted(
        "",
        "yes please",
        "annotate",
        "annotate prefer a sort_order parameter",
        "ANNOTATE   keep the limit argument  ",
        "approve",
        "exit",  # never read: the review ended at approve
    )
    review = interactive_review(run_dir, console, read)
    text = out.getvalue()
    assert review.decision == "approve"
    assert [note.text for note in review.annotations] == [
        "prefer a sort_order parameter",
        "keep the limit argument",
    ]
    assert prompts == [PROMPT] * 6
    assert require_approval(run_dir) == review
    # the figures, the bugs in fix order, the narrative
    assert (
        "3 bug(s); highest token_cost_of_gap 12,114 tokens (EFF-oversized-result-query-email-database)"
        in text
    )
    table = text[text.index("Fix order:") :]
    positions = [table.index(bug.id) for bug in (FTS_RANK, OVERSIZED, SORT_GAP)]
    assert positions == sorted(positions)
    for column in ("id / trigger", "type", "severity", "tool", "gap tokens", "occurrences"):
        assert column in text
    assert "calling `query_email_database` [without fields]" in text  # shown as typed, not as markup
    assert f"Phase 2 evaluation of {RUN_ID}" in text and "Per-task efficiency" in text
    # an unknown command gets the help, an empty annotate says what it needs
    assert text.count("Commands: `approve`") == 2
    assert "annotate needs text" in text
    assert "approved 3 bug(s) for the fix loop, 2 annotation(s)" in text


def test_end_of_input_leaves_without_approving(run_dir: RunDir) -> None:
    console, out = recording_console()
    read, _ = scripted("annotate prefer a sort_order parameter")
    review = interactive_review(run_dir, console, read)
    assert review.decision == "exit"
    assert [note.text for note in review.annotations] == ["prefer a sort_order parameter"]
    assert "end of input: leaving the review without approving" in out.getvalue()
    with pytest.raises(UserError, match="chose `exit`"):
        require_approval(run_dir)


@pytest.mark.parametrize("answer", ["y", "yes", "ok", "approve all", "approved", "accept", "a"])
def test_nothing_but_the_word_approve_approves(run_dir: RunDir, answer: str) -> None:
    console, _ = recording_console()
    read, prompts = scripted(answer)
    assert interactive_review(run_dir, console, read).decision == "exit"
    assert len(prompts) == 2  # asked again after the answer, then end of input


def test_approve_at_the_prompt_with_ids_approves_those_alone(run_dir: RunDir) -> None:
    console, out = recording_console()
    read, prompts = scripted(f"approve {SORT_GAP.id} BUG-invented", f"approve {SORT_GAP.id} {FTS_RANK.id}")
    review = interactive_review(run_dir, console, read)
    assert "'BUG-invented' is not a bug of this run's bug report" in out.getvalue()
    assert len(prompts) == 2 and review.bug_ids == [FTS_RANK.id, SORT_GAP.id]
    assert require_approval(run_dir) == review


def test_export_at_the_prompt_with_fixing_on_takes_the_bugs_named(run_dir: RunDir) -> None:
    console, out = recording_console()
    read, prompts = scripted("export BUG-invented", "annotate keep limit", f"export {SORT_GAP.id}")
    review = interactive_review(
        run_dir, console, read, config=load_config(run_dir.root.parents[1] / "config.yaml")
    )
    text = out.getvalue()
    assert "Commands: `approve`" in text and "`export` (write these bugs as issues" in text
    assert "'BUG-invented' is not a bug of this run's bug report. The bugs that can be exported:" in text
    assert len(prompts) == 3 and review.decision == "export" and review.bug_ids == [SORT_GAP.id]
    assert [path.name for path in run_dir.issues.iterdir()] == [f"{SORT_GAP.id}.md"]
    assert "- keep limit (" in (run_dir.issues / f"{SORT_GAP.id}.md").read_text()
    assert "issues → " in text and "/issues/ (1 file(s), one per bug" in text
    with pytest.raises(UserError, match="chose `export`"):
        require_approval(run_dir)


def test_exit_at_the_prompt_is_recorded(run_dir: RunDir) -> None:
    console, out = recording_console()
    read, _ = scripted("annotate the ranking is wrong, not the dates", "exit")
    review = interactive_review(run_dir, console, read)
    assert review.decision == "exit" and review.annotations[0].text == "the ranking is wrong, not the dates"
    assert read_model(run_dir.review, Review) == review
    assert "exit: nothing will be fixed" in out.getvalue()


def test_earlier_annotations_are_shown_when_the_report_is_reviewed_again(run_dir: RunDir) -> None:
    record_decision(run_dir, "exit", ["prefer a sort_order parameter"], by="dana")
    console, out = recording_console()
    read, _ = scripted("approve")
    review = interactive_review(run_dir, console, read)
    assert "Annotations already recorded for this report:" in out.getvalue()
    assert "  - prefer a sort_order parameter (dana)" in out.getvalue()
    assert review.decision == "approve" and [n.text for n in review.annotations] == [
        "prefer a sort_order parameter"
    ]


def test_a_clean_run_still_stops_at_review(project: Path) -> None:
    clean = write_run(project / "runs", NEXT_RUN_ID, [])
    console, out = recording_console()
    read, prompts = scripted("approve")
    review = interactive_review(clean, console, read)
    assert "no bugs found, so there is nothing to fix" in out.getvalue()
    assert prompts == [PROMPT]
    assert review.decision == "approve" and review.bug_ids == []
    assert "approved: no bugs, nothing to fix" in out.getvalue()
    assert require_approval(clean) == review


def test_narrow_consoles_stack_the_bug_fields_under_whole_ids(run_dir: RunDir) -> None:
    console, out = recording_console(width=80)
    interactive_review(run_dir, console, scripted("exit")[0])
    text = out.getvalue()
    for bug in (OVERSIZED, SORT_GAP, FTS_RANK):
        assert bug.id in text  # never folded
    assert "bug · high · query_email_database" in text


def test_the_checkpoint_without_a_terminal_says_how_to_continue(run_dir: RunDir) -> None:
    console, out = recording_console()
    assert review_checkpoint(run_dir, console, interactive=False) is None
    assert continue_hint(run_dir) in out.getvalue()
    assert not run_dir.review.exists()
    record_decision(run_dir, "approve")
    console, out = recording_console()
    assert review_checkpoint(run_dir, console, interactive=False) == require_approval(run_dir)
    assert "approved 3 bug(s)" in out.getvalue()


def test_the_checkpoint_asks_when_told_there_is_a_person(run_dir: RunDir) -> None:
    console, _ = recording_console()
    read, prompts = scripted("approve")
    review = review_checkpoint(run_dir, console, interactive=True, input_fn=read)
    assert review is not None and review.decision == "approve" and prompts == [PROMPT]


def test_fix_order_is_server_first_then_severity_then_gap_ties_by_id() -> None:
    twin = make_bug("EFF-aaa-first", "efficiency", OVERSIZED.token_cost_of_gap, tool="get_email", trigger="t")
    agent = make_bug("EFF-too-many-calls-lookup", "efficiency", 99_999, tool="get_email", trigger="t")
    agent = agent.model_copy(update={"fixable_by": "agent", "severity": "high"})
    report = make_report(RUN_ID, [SORT_GAP, agent, OVERSIZED, FTS_RANK, twin])
    order = [FTS_RANK.id, twin.id, OVERSIZED.id, SORT_GAP.id]
    assert [bug.id for bug in fix_order(report)] == [*order, agent.id]
    assert [bug.id for bug in bugs_to_fix(report)] == order, "agent behaviour is never sent to the fixer"


def test_a_bug_priced_entirely_under_another_is_not_sent_to_the_fixer() -> None:
    priced = OVERSIZED.model_copy(update={"token_cost_of_gap": 0, "see_also": [SORT_GAP.id]})
    unpriced = FTS_RANK.model_copy(update={"token_cost_of_gap": 0})  # no owner: still a fix of its own
    report = make_report(RUN_ID, [SORT_GAP, priced, unpriced])
    assert [bug.id for bug in bugs_to_fix(report)] == [FTS_RANK.id, SORT_GAP.id]
    assert priced.id in [bug.id for bug in fix_order(report)], "kept in the report as evidence"


def test_an_approval_scoped_to_some_bugs_keeps_the_fix_order(run_dir: RunDir) -> None:
    review = record_decision(run_dir, "approve", bug_ids=[SORT_GAP.id, FTS_RANK.id, SORT_GAP.id])
    assert review.bug_ids == [FTS_RANK.id, SORT_GAP.id]
    approved, report = approved_report(run_dir)
    assert [bug.id for bug in approved_bugs(approved, report)] == [FTS_RANK.id, SORT_GAP.id]


def test_an_agent_bug_cannot_be_approved(run_dir: RunDir) -> None:
    agent = make_bug("EFF-too-many-calls-lookup", "efficiency", 99_999, tool="get_email", trigger="t")
    reevaluate(run_dir, [FTS_RANK, agent.model_copy(update={"fixable_by": "agent"})])
    with pytest.raises(UserError) as info:
        record_decision(run_dir, "approve", bug_ids=[agent.id])
    assert f"{agent.id!r} is not sent to the fix loop" in info.value.message
    assert FTS_RANK.id in info.value.message and not run_dir.review.exists()


def test_an_exit_approves_no_bugs(run_dir: RunDir) -> None:
    assert record_decision(run_dir, "exit").bug_ids == []
    with pytest.raises(UserError, match="`exit` approves nothing"):
        record_decision(run_dir, "exit", bug_ids=[FTS_RANK.id])


def test_the_seal_key_is_made_once_and_readable_by_its_owner_only(run_dir: RunDir) -> None:
    record_decision(run_dir, "exit")
    key = review_key_path(run_dir)
    made = key.read_bytes()
    assert key.stat().st_mode & 0o777 == 0o600
    record_decision(run_dir, "approve")
    assert key.read_bytes() == made
    assert require_approval(run_dir).decision == "approve"


def test_cli_bug_needs_approve_or_export(project: Path, run_dir: RunDir) -> None:
    result = invoke(project, RUN_ID, "--exit", "--bug", FTS_RANK.id)
    assert result.exit_code == 2
    assert "--bug scopes an approval or an export: add --approve or --export" in result.output
    assert not run_dir.review.exists()


def test_the_review_marks_agent_bugs_and_approves_only_the_server_ones(run_dir: RunDir) -> None:
    agent = make_bug("EFF-too-many-calls-lookup", "efficiency", 99_999, tool="get_email", trigger="t")
    agent = agent.model_copy(update={"fixable_by": "agent"})
    reevaluate(run_dir, [FTS_RANK, agent])
    console, out = recording_console()
    review = interactive_review(run_dir, console, scripted("approve")[0])
    text = out.getvalue()
    assert "1 of them are agent behaviour" in text and "not sent to the fix loop" in text
    table = text[text.index("Fix order:") :]
    assert table.index(FTS_RANK.id) < table.index(agent.id)
    assert review.bug_ids == [FTS_RANK.id]


def test_a_bug_with_no_cost_of_its_own_is_shown_under_the_bug_that_prices_it(run_dir: RunDir) -> None:
    priced = make_bug(
        "EFF-repeated-calls-query-email-database", "efficiency", 0, tool="query_email_database", trigger="t"
    )
    priced = priced.model_copy(update={"see_also": [FTS_RANK.id]})
    reevaluate(run_dir, [FTS_RANK, priced])
    console, out = recording_console()
    review = interactive_review(run_dir, console, scripted("approve")[0])
    text = out.getvalue()
    assert text.count(priced.id) == 1 and "1 bug(s); highest" in text
    assert f"also seen, no cost of its own (priced in {FTS_RANK.id}): {priced.id}" in " ".join(text.split())
    assert review.bug_ids == [FTS_RANK.id]


# --- the command line ---------------------------------------------------------------------------


def invoke(project: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    cli = CliRunner()
    return cli.invoke(
        main, ["review", *args, "--config", str(project / "config.yaml")], input=input, catch_exceptions=False
    )


def test_cli_approve_with_annotations(project: Path, run_dir: RunDir) -> None:
    result = invoke(
        project, RUN_ID, "--approve", "--annotate", "prefer a sort_order parameter", "--annotate", "x"
    )
    assert result.exit_code == 0, result.output
    assert "approved 3 bug(s) for the fix loop, 2 annotation(s)" in result.output
    assert f"next: `{script_command('mcpipechekr')} fix {RUN_ID}`" in result.output
    review = require_approval(run_dir)
    assert [note.text for note in review.annotations] == ["prefer a sort_order parameter", "x"]


def test_an_approval_the_fix_step_could_not_act_on_is_never_recorded(project: Path, run_dir: RunDir) -> None:
    config_path = project / "config.yaml"
    (project / "plain").mkdir()
    config = {"server": {"command": "python", "repo": "plain"}, "paths": {"runs": "runs"}}
    config_path.write_text(yaml.safe_dump(config))
    result = invoke(project, RUN_ID, "--approve")
    assert result.exit_code == 2
    assert f"{RUN_ID}: not approved, because the fix step could not run:" in result.output
    assert "field 'server.repo': " in result.output and "plain is not a git repository" in result.output
    assert not run_dir.review.exists()
    with pytest.raises(UserError, match="Nothing was recorded"):
        record_decision(run_dir, "approve", config=load_config(config_path))
    assert not run_dir.review.exists()

    # at the prompt the refusal is shown and the question asked again; `exit` is still recorded
    result = invoke(project, RUN_ID, "--interactive", input="approve\nexit\n")
    assert result.exit_code == 0, result.output
    assert result.output.count(PROMPT) == 2 and "not approved, because the fix step" in result.output
    assert read_model(run_dir.review, Review).decision == "exit"


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"server": {"command": "python"}}, "server.repo is not set"),
        (
            {"server": {"command": "python", "repo": "server"}, "fix": {"agent": "none"}},
            "fix.agent is `none`",
        ),
    ],
)
def test_with_fixing_off_an_approval_is_refused_with_what_to_type_instead(
    project: Path, run_dir: RunDir, config: dict[str, object], reason: str
) -> None:
    (project / "config.yaml").write_text(yaml.safe_dump({**config, "paths": {"runs": "runs"}}))
    result = invoke(project, RUN_ID, "--approve")
    assert result.exit_code == 2
    assert f"{RUN_ID}: not approved, because fixing is off: {reason}" in result.output
    assert f"mcpipechekr review {RUN_ID} --export`" in result.output
    assert "Nothing was recorded" in result.output
    assert not run_dir.review.exists()

    # the prompt offers annotate, export and exit; `approve` is refused and asked again
    result = invoke(project, RUN_ID, "--interactive", input="approve\nannotate keep limit\nexport\n")
    assert result.exit_code == 0, result.output
    assert f"Fixing is off: {reason}" in result.output
    assert "Commands: `annotate <text>`" in result.output and "`approve`" not in help_line(result.output)
    assert result.output.count(PROMPT) == 3 and "not approved, because fixing is off" in result.output
    assert "the exported issues carry it" in result.output
    review = read_model(run_dir.review, Review)
    assert review.decision == "export" and review.bug_ids == [FTS_RANK.id, OVERSIZED.id, SORT_GAP.id]
    assert sorted(path.stem for path in run_dir.issues.iterdir()) == sorted(review.bug_ids)


def help_line(output: str) -> str:
    """The line of the prompt's help: what it offers."""
    (line,) = {line for line in output.splitlines() if "Commands: " in line}
    return line


def test_cli_takes_a_run_folder_without_a_config(run_dir: RunDir, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").unlink()
    result = CliRunner().invoke(main, ["review", str(run_dir.root), "--approve"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert require_approval(run_dir).decision == "approve"


def test_cli_without_a_terminal_or_a_decision_approves_nothing(project: Path, run_dir: RunDir) -> None:
    result = invoke(project, "latest", input="approve\n")  # piped input is not a person at a terminal
    assert result.exit_code == 2
    assert "3 bug(s); highest token_cost_of_gap 12,114" in result.output
    assert f"mcpipechekr review {RUN_ID} --approve" in result.output
    assert "nothing is approved without a person" in result.output
    assert not run_dir.review.exists()


def test_cli_without_a_terminal_reports_an_earlier_decision(project: Path, run_dir: RunDir) -> None:
    record_decision(run_dir, "approve")
    result = invoke(project, RUN_ID)
    assert result.exit_code == 0, result.output
    assert "approved 3 bug(s) for the fix loop" in result.output
    reevaluate(run_dir, [OVERSIZED])
    assert invoke(project, RUN_ID).exit_code == 2  # that decision was on another report


def test_cli_interactive_flow(project: Path, run_dir: RunDir) -> None:
    result = invoke(
        project, RUN_ID, "--interactive", input="annotate prefer a sort_order parameter\napprove\n"
    )
    assert result.exit_code == 0, result.output
    assert result.output.count(PROMPT) == 2
    review = require_approval(run_dir)
    assert [note.text for note in review.annotations] == ["prefer a sort_order parameter"]


def test_cli_interactive_with_annotate_flags_and_end_of_input(project: Path, run_dir: RunDir) -> None:
    result = invoke(project, RUN_ID, "--interactive", "--annotate", "keep limit", input="")
    assert result.exit_code == 0, result.output
    assert f"{PROMPT}annotate keep limit" in result.output
    review = read_model(run_dir.review, Review)
    assert review.decision == "exit" and [note.text for note in review.annotations] == ["keep limit"]
    assert run_dir.session_summary.exists()


def test_cli_exit_writes_the_session_summary(project: Path, run_dir: RunDir) -> None:
    result = invoke(project, RUN_ID, "--exit")
    assert result.exit_code == 0, result.output
    assert "exit: nothing will be fixed" in result.output
    assert f"session summary → {run_dir.session_summary}" in result.output
    summary = run_dir.session_summary.read_text()
    assert f"### {RUN_ID}" in summary and "review: exit by" in summary


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--approve", "--exit"], "--approve, --export and --exit are mutually exclusive"),
        (["--export", "--exit"], "--approve, --export and --exit are mutually exclusive"),
        (["--annotate", "keep limit"], "--annotate is recorded with a decision"),
        (["--approve", "--interactive"], "drop --approve/--export/--exit"),
        (["run-20261202-009", "--approve"], "no run `run-20261202-009`"),
    ],
)
def test_cli_bad_input(project: Path, run_dir: RunDir, args: list[str], message: str) -> None:
    result = invoke(project, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not run_dir.review.exists()


def test_cli_help_describes_the_decisions() -> None:
    result = CliRunner().invoke(main, ["review", "--help"])
    assert result.exit_code == 0
    for flag in ("--approve", "--export", "--exit", "--annotate", "--interactive"):
        assert flag in result.output


# --- the session summary ------------------------------------------------------------------------


def test_session_summary_of_a_loop_that_fixed_two_bugs(
    project: Path, run_dir: RunDir, frozen_clock: Callable[[datetime], None]
) -> None:
    frozen_clock(T0 + timedelta(hours=1))  # the approval comes an hour after the run started
    record_decision(run_dir, "approve", ["prefer a sort_order parameter"], by="dana")
    second = write_run(
        project / "runs",
        NEXT_RUN_ID,
        [OVERSIZED],
        tasks=[
            task_stats("find-first-email-ron-chinn", 2, 3.0, 1_200.0),
            task_stats("latest-email-from-ron-chinn", 1, 2.0, 1_016.0),
        ],
    )
    record_decision(second, "exit", by="dana")
    path = write_session_summary([run_dir, second], second.session_summary, regressions=["nothing came back"])
    text = path.read_text()
    assert path == second.session_summary
    assert f"covering 2 run(s): {RUN_ID}, {NEXT_RUN_ID}." in text
    assert f"| {RUN_ID} | 2026-12-02 09:00 | completed | 0123456789ab | 2 | demo | demo | demo |" in text
    assert "`find-first-email-ron-chinn`, `latest-email-from-ron-chinn`" in text
    assert "3 bug(s); review: approve by dana at 2026-12-02 10:00" in text and "1 annotation(s)" in text
    assert f"`{OVERSIZED.id}` (efficiency, medium, 12,114 tokens x 1)" in text
    assert f"Gone since the previous run: `{FTS_RANK.id}`, `{SORT_GAP.id}`." in text
    assert "New since the previous run: none." in text
    assert "1 bug(s); review: exit by dana" in text
    # costs: tokens and calls are mean x attempts, summed over tasks
    assert f"| {RUN_ID} | 2 | 10 | 3,800 | estimated |" in text
    assert f"| {NEXT_RUN_ID} | 3 | 8 | 3,416 | estimated |" in text
    assert "Total: 18 tool call(s), 7,216 tokens." in text
    assert "## Regressions\n\n- nothing came back" in text
    assert "Nothing: no run of this session has a fix record" in text


def test_session_summary_says_what_is_missing(tmp_path: Path) -> None:
    bare = RunDir(tmp_path / "runs" / RUN_ID)
    bare.root.mkdir(parents=True)
    broken = write_run(tmp_path / "runs", NEXT_RUN_ID, [FTS_RANK])
    broken.bug_report.write_text("{ not json")
    text = write_session_summary([bare, broken], tmp_path / "summary.md").read_text()
    assert f"| {RUN_ID} | - | no manifest.json |" in text
    assert f"### {RUN_ID}\n\nNot evaluated (no bug_report.json)." in text
    assert "Unreadable artifacts (left out below):" in text and "bug_report.json: not valid JSON" in text
    assert f"| {NEXT_RUN_ID} | - | - | - | not evaluated |" in text
    assert "## Regressions" not in text


@pytest.mark.slow
def test_a_person_at_a_real_terminal(project: Path, run_dir: RunDir, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a pseudo-terminal the command asks without being told to; Ctrl-D at a second review exits."""
    import pexpect

    monkeypatch.chdir(project)  # where the command runs, and so how it spells the commands it names
    command = [
        sys.executable,
        "-m",
        "mcpipechekr",
        "review",
        RUN_ID,
        "--config",
        str(project / "config.yaml"),
    ]
    child = pexpect.spawn(command[0], command[1:], cwd=str(project), encoding="utf-8", timeout=30)
    child.setwinsize(40, 100)
    child.expect_exact("highest token_cost_of_gap 12,114")
    child.expect_exact(PROMPT)
    child.sendline("annotate prefer a sort_order parameter")
    child.expect_exact("noted (1 annotation(s) this review)")
    child.expect_exact(PROMPT)
    child.sendline("approve")
    child.expect_exact(f"next: `{script_command('mcpipechekr')} fix {RUN_ID}`")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert [note.text for note in require_approval(run_dir).annotations] == ["prefer a sort_order parameter"]

    child = pexpect.spawn(command[0], command[1:], cwd=str(project), encoding="utf-8", timeout=30)
    child.expect_exact("Annotations already recorded for this report:")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect_exact("end of input: leaving the review without approving")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert read_model(run_dir.review, Review).decision == "exit"
    assert run_dir.session_summary.exists()


def test_session_summary_lists_the_fix_commits_and_the_health_after_them(
    project: Path, run_dir: RunDir
) -> None:
    fix_record = pytest.importorskip("mcpipechekr.artifacts.fix_record")
    record_decision(run_dir, "approve", by="dana")
    commit = "9f2c4e1d" + "0" * 32
    record = fix_record.FixRecord(
        run_id=RUN_ID,
        bug_report_hash=sha256_file(run_dir.bug_report),
        agent="demo",
        repo=".mcpipechekr/workspace/emailindex",
        base_commit="1" * 40,
        started_at=T0,
        finished_at=T0 + timedelta(minutes=1),
        bugs=[
            fix_record.BugFix(
                bug_id=OVERSIZED.id,
                status="committed",
                iterations=1,
                commit=commit,
                files_changed=["server.py"],
            ),
            fix_record.BugFix(
                bug_id=SORT_GAP.id, status="unresolved", iterations=5, reason="no prepared patch matches"
            ),
        ],
        health=fix_record.FixHealth(healthy=True, tools=3, elapsed_s=1.2, after_commit=commit, checked_at=T0),
    )
    write_model(run_dir.fix_record, record)
    text = write_session_summary([run_dir], run_dir.session_summary).read_text()
    assert f"| `{OVERSIZED.id}` | committed | 1 | 9f2c4e1d0000 | server.py | - |" in text
    assert f"| `{SORT_GAP.id}` | unresolved | 5 | - | - | no prepared patch matches |" in text
    assert "1 of 2 bug(s) committed in .mcpipechekr/workspace/emailindex." in text
    assert "Server after the fixes: healthy, 3 tool(s)." in text

    broken = record.model_copy(
        update={
            "finished_at": None,
            "health": fix_record.FixHealth(
                healthy=False, tools=0, after_commit=commit, error="server exited with code 1", checked_at=T0
            ),
        }
    )
    write_model(run_dir.fix_record, broken)
    text = write_session_summary([run_dir], run_dir.session_summary).read_text()
    unhealthy = "Server UNHEALTHY at 9f2c4e1d0000 with the fix agent's changes undone: server exited with"
    assert unhealthy in text
    assert "The fix loop did not finish" in text
