"""`mcpipechekr compare`: two evaluated runs side by side, with Fisher's exact test, bootstrap intervals,
bugs by id and a verdict.

The runs are built the way the pipeline builds them: a manifest from `runplan.new_manifest`, traces
written with the trace model, and the real `evaluate_run` making each bug_report.json from them. The
server is a small bookshop (not the bundled example), so nothing here is tuned to emailindex.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result
from trace_builder import call, make_trace

from mcpipechekr.artifacts import BugReport, RunDir, read_model, write_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.comparison import Comparison
from mcpipechekr.artifacts.manifest import Manifest
from mcpipechekr.artifacts.schemas import schema_for
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.report import write_report
from mcpipechekr.report.compare import compare_runs
from mcpipechekr.report.compare_html import render_comparison_html
from mcpipechekr.report.compare_stats import bootstrap_mean_difference, fisher_exact
from mcpipechekr.report.compare_text import render_comparison_text
from mcpipechekr.runplan import new_manifest
from mcpipechekr.tasks import load_tasks

T0 = "2026-12-01T09:00:00Z"
TASKS = {
    "tasks": [
        {
            "task_id": "count-scifi",
            "prompt": "How many science-fiction books are in stock?",
            "task_type": "deterministic",
            "expected_tool": "count_books",
            "min_calls": 1,
        },
        {
            "task_id": "first-edition-year",
            "prompt": "In which year was the shop's oldest first edition printed?",
            "task_type": "deterministic",
            "expected_tool": "search_books",
            "min_calls": 1,
        },
        {
            "task_id": "cheapest-poetry",
            "prompt": "What does the cheapest poetry book cost, in cents?",
            "task_type": "deterministic",
            "expected_tool": "search_books",
            "min_calls": 1,
        },
    ]
}


def _entry(task_id: str, value: int) -> BaselineEntry:
    return BaselineEntry(
        task_id=task_id,
        result={"values": [[value]], "match": "all"},
        plausibility_score=1.0,
        evaluator="rules",
        timestamp=T0,
        method="reference_calls",
        calls=1,
        reference_tokens=40,
    )


def count_scifi(*, fixed: bool, repetition: int):
    """Before the fix, `count_books` fails on `genre` and the agent counts a search's hits (wrongly)."""
    if fixed:
        steps = [call("count_books", {"genre": "science fiction"}, {"count": 42})]
        return make_trace("count-scifi", steps, answer="42 books are in stock.", repetition=repetition)
    steps = [
        call("count_books", {"genre": "science fiction"}, error="Error: no such column: genre"),
        call("search_books", {"query": "science fiction", "limit": 50}, {"total": 41, "books": []}),
    ]
    return make_trace("count-scifi", steps, answer="41 books are in stock.", repetition=repetition)


def first_edition(*, right: bool, repetition: int, repeat_call: bool = False):
    """One search; the answer is right or not (the agent misreads the list), whatever the server."""
    search = call("search_books", {"query": "first edition", "sort": "year"}, {"books": [{"year": 1902}]})
    steps = [search, search] if repeat_call else [search]
    answer = "It was printed in 1902." if right else "It was printed in 1920."
    return make_trace("first-edition-year", steps, answer=answer, repetition=repetition)


def cheapest_poetry(*, repetition: int):
    steps = [call("search_books", {"query": "poetry", "sort": "price"}, {"books": [{"price_cents": 450}]})]
    return make_trace("cheapest-poetry", steps, answer="450 cents.", repetition=repetition)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A bookshop project: config.yaml, tasks.yaml and the shared baseline; runs are added per test."""
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    config = {
        "server": {"name": "bookshop", "command": "python", "args": ["bookshop.py"]},
        "paths": {"runs": "runs"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    baseline = Baseline(
        generated_at=T0,
        tasks=[_entry("count-scifi", 42), _entry("first-edition-year", 1902), _entry("cheapest-poetry", 450)],
    )
    write_model(tmp_path / "runs" / "baseline.json", baseline)
    return tmp_path


def make_run(
    project: Path, run_id: str, traces: list, *, server: str = "bookshop", evaluate: bool = True
) -> Path:
    """A run folder as the pipeline leaves it: manifest, traces and (unless told) its evaluation."""
    config_path = project / "config.yaml"
    if server != "bookshop":
        data = yaml.safe_load(config_path.read_text())
        data["server"]["name"] = server
        config_path = project / f"config-{server}.yaml"
        config_path.write_text(yaml.safe_dump(data))
    config = load_config(config_path)
    run = RunDir(project / "runs" / run_id)
    run.root.mkdir(parents=True)
    task_ids = sorted({trace.task_id for trace in traces})
    tasks = [task for task in load_tasks(config.paths.tasks).tasks if task.task_id in task_ids]
    manifest = new_manifest(config, run_id, tasks, parameters={"repeat": 10})
    write_model(run.manifest, manifest.finished("completed"))
    for trace in traces:
        write_trace(run, trace)
    if evaluate:
        evaluate_run(config, run)
    return run.root


def before_fix(project: Path, run_id: str = "run-20261201-001", *, right: int = 5) -> Path:
    """Ten attempts per task: count-scifi always wrong (the server's bug), first-edition-year right
    `right` times."""
    traces = [count_scifi(fixed=False, repetition=r) for r in range(1, 11)]
    traces += [first_edition(right=r <= right, repetition=r) for r in range(1, 11)]
    return make_run(project, run_id, traces)


def after_fix(
    project: Path, run_id: str = "run-20261201-002", *, right: int = 6, repeat_once: bool = True
) -> Path:
    """The fixed server: count-scifi right every time, in one call; with `repeat_once`, the last
    first-edition-year attempt repeats its search (a new, agent-side bug)."""
    traces = [count_scifi(fixed=True, repetition=r) for r in range(1, 11)]
    traces += [
        first_edition(right=r <= right, repetition=r, repeat_call=repeat_once and r == 10)
        for r in range(1, 11)
    ]
    return make_run(project, run_id, traces)


def git(repo: Path, *args: str) -> str:
    command = [
        "git",
        "-c",
        "user.name=Test",
        "-c",
        "user.email=test@example.com",
        "-c",
        "commit.gpgsign=false",
    ]
    return subprocess.run(
        [*command, *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def compare_cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["compare", *map(str, args)], catch_exceptions=False)


# --- the tests, exactly --------------------------------------------------------------------------


def test_fisher_exact_matches_known_values() -> None:
    # Fisher's lady tasting tea: 8 cups, 4 with milk first. All four right: 1/70 one-sided, 2/70 two-sided.
    assert fisher_exact(4, 0, 0, 4, "greater") == pytest.approx(1 / 70)
    assert fisher_exact(4, 0, 0, 4) == pytest.approx(0.02857, abs=5e-6)
    # Three of four right: 17/70 = 0.2429 one-sided, 34/70 = 0.4857 two-sided.
    assert fisher_exact(3, 1, 1, 3, "greater") == pytest.approx(17 / 70)
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857, abs=5e-5)
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=5e-7)  # Wikipedia's worked example
    assert fisher_exact(1, 9, 11, 3, "less") == pytest.approx(0.001380, abs=5e-7)
    assert fisher_exact(0, 10, 10, 0) == pytest.approx(2 / 184756)  # 0/10 against 10/10: C(20, 10)
    assert fisher_exact(10, 0, 0, 10) == fisher_exact(0, 10, 10, 0)
    assert fisher_exact(5, 5, 6, 4) == 1.0
    assert fisher_exact(0, 0, 0, 0) == 1.0
    with pytest.raises(ValueError):
        fisher_exact(-1, 2, 3, 4)


def test_bootstrap_interval_is_seeded_and_holds_the_difference() -> None:
    a, b = [5.0, 5.0, 4.0, 6.0, 5.0], [1.0, 1.0, 2.0, 1.0, 3.0]
    found = bootstrap_mean_difference(a, b, seed="s")
    assert found == bootstrap_mean_difference(a, b, seed="s")
    assert (found.mean_a, found.mean_b, found.difference) == (5.0, 1.6, pytest.approx(-3.4))
    assert found.low <= found.difference <= found.high < 0 and found.excludes_zero
    flat = bootstrap_mean_difference([2.0, 2.0], [1.0, 1.0], seed="s")
    assert (flat.low, flat.high) == (-1.0, -1.0)
    overlap = bootstrap_mean_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], seed="s")
    assert overlap.low < 0 < overlap.high and not overlap.excludes_zero


# --- two runs of one server, before and after a fix ------------------------------------------------


def test_a_fixed_server_is_better_on_its_task_and_not_on_the_noisy_one(project: Path) -> None:
    a = before_fix(project)
    b = after_fix(project, repeat_once=False)
    comparison = compare_runs(a, b)
    tasks = {task.task_id: task for task in comparison.tasks}
    fixed = tasks["count-scifi"]
    assert (fixed.success_a.successes, fixed.success_b.successes) == (0, 10)
    assert fixed.p_value == pytest.approx(1.0825e-5, rel=1e-3)
    assert fixed.verdict == "better" and fixed.changed == ["success", "calls", "tokens"]
    assert (fixed.calls.mean_a, fixed.calls.mean_b, fixed.calls.significant) == (2.0, 1.0, True)
    assert fixed.tokens.difference < 0
    noisy = tasks["first-edition-year"]
    assert (noisy.success_a.successes, noisy.success_b.successes, noisy.p_value) == (5, 6, 1.0)
    assert noisy.verdict == "no_significant_difference" and noisy.changed == []
    statuses = {bug.id: bug.status for bug in comparison.bugs}
    assert statuses == {
        "BUG-no-such-column-genre-count-books": "fixed",
        "COR-wrong-answer-count-scifi": "fixed",
        "COR-wrong-answer-first-edition-year": "unchanged",
    }
    assert comparison.verdict == "better" and comparison.warnings == []
    assert (
        comparison.verdict_line == "B is better: 1 task improved significantly, 0 worse; 2 bugs fixed, 0 new"
    )
    assert comparison.changes == []  # same server source (none recorded), model and tasks
    backwards = compare_runs(b, a)
    assert [task.verdict for task in backwards.tasks] == ["worse", "no_significant_difference"]
    assert backwards.verdict == "worse"
    assert (
        backwards.verdict_line == "B is worse: 0 tasks improved significantly, 1 worse; 0 bugs fixed, 2 new; "
        "success fell in train 16/20 → 5/20"
    )


def test_a_new_bug_makes_the_verdict_mixed_and_the_reverse_is_worse(project: Path) -> None:
    a, b = before_fix(project), after_fix(project, repeat_once=True)
    comparison = compare_runs(a, b)
    new = [bug for bug in comparison.bugs if bug.status == "new"]
    assert [(bug.id, bug.occurrences_a, bug.occurrences_b) for bug in new] == [
        ("EFF-repeated-calls-search-books", 0, 1)
    ]
    # One repeated call in ten attempts: calls went up a little, not significantly.
    task = next(task for task in comparison.tasks if task.task_id == "first-edition-year")
    assert (
        task.calls.mean_b == 1.1
        and not task.calls.significant
        and task.verdict == "no_significant_difference"
    )
    assert comparison.verdict == "mixed"
    assert comparison.verdict_line == "Mixed: 1 task improved significantly, 0 worse; 2 bugs fixed, 1 new"
    backwards = compare_runs(b, a)
    assert backwards.verdict == "mixed"
    assert backwards.verdict_line == (
        "Mixed: 0 tasks improved significantly, 1 worse; 1 bug fixed, 2 new; "
        "success fell in train 16/20 → 5/20"
    )


def errored(task_id: str, repetition: int):
    """An attempt whose agent never had a working server: no answer, no calls."""
    trace = make_trace(task_id, [], answer=None, repetition=repetition, status="errored")
    return trace.model_copy(update={"status_reason": "the server did not start within 60 s"})


def test_a_bug_whose_tasks_b_never_answered_is_not_seen_not_fixed(project: Path) -> None:
    """B's attempts at the broken task all failed to reach the server: its bugs are not fixed, and
    nothing about those attempts enters a figure."""
    a = before_fix(project)
    traces = [errored("count-scifi", r) for r in range(1, 4)]
    traces += [first_edition(right=r <= 5, repetition=r) for r in range(1, 11)]
    b = make_run(project, "run-20261201-002", traces)
    comparison = compare_runs(a, b)
    statuses = {bug.id: bug.status for bug in comparison.bugs}
    assert statuses["BUG-no-such-column-genre-count-books"] == "not_compared"
    assert statuses["COR-wrong-answer-count-scifi"] == "not_compared"
    assert comparison.summary.bugs_fixed == 0
    assert (comparison.b.attempts, comparison.b.errored) == (10, 3)
    assert comparison.verdict != "better"
    assert "2 not seen (no answered attempt)" in comparison.verdict_line
    assert any(
        "run-20261201-002 has 3 errored attempts" in warning and "count-scifi" in warning
        for warning in comparison.warnings
    ), comparison.warnings


def test_attempts_that_never_answered_are_listed_apart_and_first_and_judged_nowhere(project: Path) -> None:
    """A server that never started for one attempt and a model provider that failed for another: no
    wrong answer, no figure, and the report, its narrative and its page say so before anything else."""
    failed = make_trace("first-edition-year", [], answer=None, repetition=2, status="error")
    failed = failed.model_copy(update={"status_reason": "ModelHTTPError: status_code: 503"})
    traces = [first_edition(right=True, repetition=1), failed, errored("first-edition-year", 3)]
    run = RunDir(make_run(project, "run-20261201-001", traces))
    report = read_model(run.bug_report, BugReport)
    assert [(item.trace, item.reason) for item in report.errored] == [
        ("traces/first-edition-year__demo__r002.json", "the agent, its runner or its model failed: "
         "ModelHTTPError: status_code: 503"),
        ("traces/first-edition-year__demo__r003.json", "the server did not start within 60 s"),
    ]  # fmt: skip
    (stats,) = report.tasks
    assert (stats.runs, stats.successes, stats.success_rate) == (1, 1, 1.0)
    assert report.bugs == []
    assert report.notes[0].startswith("2 attempt(s) errored (`first-edition-year`)")
    narrative = run.phase2_narrative.read_text()
    assert narrative.splitlines()[2].startswith("**2 attempt(s) errored and are in no figure below**")
    assert "## Errored attempts" in narrative and "status_code: 503" in narrative
    page = write_report(run).read_text()
    assert "2 attempt(s) errored (an infrastructure failure) and are in no figure:" in page
    assert page.index("2 attempt(s) errored") < page.index("No bugs.")


def test_a_fall_in_success_is_never_better_though_bugs_were_fixed(project: Path) -> None:
    """Two bugs fixed, no task significantly worse, but fewer answers right in all: mixed, and why."""
    a = make_run(
        project,
        "run-20261201-001",
        [count_scifi(fixed=False, repetition=r) for r in (1, 2)]
        + [first_edition(right=r <= 9, repetition=r) for r in range(1, 11)],
    )
    b = make_run(
        project,
        "run-20261201-002",
        [count_scifi(fixed=True, repetition=1)]
        + [first_edition(right=r <= 6, repetition=r) for r in range(1, 11)],
    )
    comparison = compare_runs(a, b)
    assert comparison.summary.bugs_fixed == 2 and comparison.summary.tasks_worse == 0
    assert comparison.verdict == "mixed"
    assert comparison.verdict_line.endswith("success fell in train 9/12 → 7/11")


def test_runs_that_differ_in_more_than_the_server_get_no_verdict(project: Path) -> None:
    """Another agent runner and another setting between the runs: each named, and no verdict drawn."""
    a = before_fix(project)
    again = before_fix(project, "run-20261201-003")
    config = yaml.safe_load((project / "config.yaml").read_text())
    config["thresholds"] = {"open_ended_divergence": 0.5}
    (project / "config.yaml").write_text(yaml.safe_dump(config))
    traces = [count_scifi(fixed=True, repetition=r) for r in range(1, 11)]
    traces += [first_edition(right=r <= 6, repetition=r) for r in range(1, 11)]
    b = make_run(project, "run-20261201-002", [t.model_copy(update={"runner": "opencode"}) for t in traces])
    comparison = compare_runs(a, b)
    assert "agent runner: demo → opencode" in comparison.changes
    assert "config thresholds.open_ended_divergence: 0.2 → 0.5" in comparison.changes, comparison.changes
    assert comparison.verdict == "not_like_for_like"
    assert comparison.verdict_line.startswith(
        "No verdict, the runs are not like for like (agent runner: demo → opencode; "
    )
    same = compare_runs(a, again)
    assert same.verdict == "no_significant_difference" and same.changes == [], same.changes


def test_another_version_of_the_agent_cli_is_named_from_the_manifests(project: Path) -> None:
    a, b = before_fix(project), before_fix(project, "run-20261201-002")
    for run, version in ((a, "opencode 1.18.33"), (b, "opencode 1.19.0")):
        manifest = read_model(RunDir(run).manifest, Manifest)
        write_model(
            RunDir(run).manifest,
            manifest.model_copy(update={"runner": "opencode", "runner_version": version}),
        )
    comparison = compare_runs(a, b)
    assert "agent runner: opencode (opencode 1.18.33) → opencode (opencode 1.19.0)" in comparison.changes
    assert comparison.verdict == "not_like_for_like"


def test_runs_that_differ_by_chance_show_no_significant_difference(project: Path) -> None:
    a = before_fix(project, "run-20261201-001", right=5)
    b = before_fix(project, "run-20261201-002", right=6)
    comparison = compare_runs(a, b)
    assert [(task.task_id, task.p_value, task.verdict) for task in comparison.tasks] == [
        ("count-scifi", 1.0, "no_significant_difference"),
        ("first-edition-year", 1.0, "no_significant_difference"),
    ]
    assert {bug.status for bug in comparison.bugs} == {"unchanged"}
    assert comparison.verdict == "no_significant_difference"
    assert comparison.verdict_line == (
        "No significant difference: 0 tasks improved significantly, 0 worse; 0 bugs fixed, 0 new"
    )


def test_the_server_commit_that_changed_is_named(project: Path) -> None:
    repo = project / "bookshop"
    repo.mkdir()
    (repo / "bookshop.py").write_text("print('v1')\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    config = yaml.safe_load((project / "config.yaml").read_text())
    config["server"]["repo"] = "bookshop"
    (project / "config.yaml").write_text(yaml.safe_dump(config))
    first = git(repo, "rev-parse", "HEAD")
    a = before_fix(project)
    (repo / "bookshop.py").write_text("print('v2')\n")
    git(repo, "commit", "-q", "-am", "fix: count_books by genre")
    second = git(repo, "rev-parse", "HEAD")
    b = after_fix(project, repeat_once=False)
    comparison = compare_runs(a, b)
    assert comparison.changes == [f"server source: {first[:12]} → {second[:12]}"]
    assert (comparison.a.server_sha, comparison.b.server_sha) == (first, second)


def test_other_servers_and_task_sets_are_compared_on_their_common_tasks(project: Path) -> None:
    a = before_fix(project)
    traces = [first_edition(right=r <= 6, repetition=r) for r in range(1, 11)]
    traces += [cheapest_poetry(repetition=r) for r in range(1, 4)]
    b = make_run(project, "run-20261201-002", traces, server="bookshop-v2")
    comparison = compare_runs(a, b)
    assert [(task.task_id, task.present_in, task.verdict) for task in comparison.tasks] == [
        ("cheapest-poetry", "b", "not_compared"),
        ("count-scifi", "a", "not_compared"),
        ("first-edition-year", "both", "no_significant_difference"),
    ]
    assert comparison.warnings == [
        "the runs tested different servers (bookshop in run-20261201-001, bookshop-v2 in run-20261201-002): "
        "only their common tasks are compared",
        "the runs have different task sets (only in run-20261201-001: count-scifi; only in run-20261201-002: "
        "cheapest-poetry): the common tasks are compared",
    ]
    assert "server: bookshop (python bookshop.py) → bookshop-v2 (python bookshop.py)" in comparison.changes
    # count-scifi's bugs were seen in a task B never ran: B could not have fixed them.
    statuses = {bug.id: bug.status for bug in comparison.bugs}
    assert statuses["BUG-no-such-column-genre-count-books"] == "not_compared"
    assert statuses["COR-wrong-answer-first-edition-year"] == "unchanged"
    assert comparison.summary.bugs_fixed == 0 and comparison.summary.tasks_compared == 1
    result = compare_cli(a, b, "--format", "json")
    assert result.exit_code == 0
    assert "warning: the runs tested different servers" in result.stderr


def test_a_report_older_than_its_traces_is_warned_about(project: Path) -> None:
    a, b = before_fix(project), after_fix(project, repeat_once=False)
    write_trace(RunDir(b), first_edition(right=True, repetition=11))
    warnings = compare_runs(a, b).warnings
    assert warnings == [
        "run-20261201-002: bug_report.json counts 10 attempt(s) of `first-edition-year` but traces/ "
        "holds 11; run `mcpipechekr evaluate run-20261201-002` again"
    ]


def test_a_task_nobody_could_check_is_not_tested_for_success(project: Path) -> None:
    a = before_fix(project)
    b = after_fix(project, repeat_once=False)
    for run in (a, b):  # the baseline loses the task's answer: evaluate leaves its answers undecided
        baseline = Baseline.model_validate_json((project / "runs" / "baseline.json").read_bytes())
        kept = [entry for entry in baseline.tasks if entry.task_id != "first-edition-year"]
        write_model(project / "runs" / "baseline.json", baseline.model_copy(update={"tasks": kept}))
        evaluate_run(load_config(project / "config.yaml"), run)
    task = next(task for task in compare_runs(a, b).tasks if task.task_id == "first-edition-year")
    assert task.success_a.undecided == 10 and task.success_a.rate is None and task.p_value is None
    assert task.verdict == "no_significant_difference"
    assert task.reason.startswith("success not tested (a run has no checked or judged answer)")


# --- the command -------------------------------------------------------------------------------------


def test_text_output_ends_with_the_verdict(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before_fix(project)
    after_fix(project, repeat_once=False)
    monkeypatch.chdir(project)
    result = compare_cli("run-20261201-001", "latest")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("A  run-20261201-001: server bookshop (source unknown), model demo, 2 task(s)")
    assert lines[-1] == "B is better: 1 task improved significantly, 0 worse; 2 bugs fixed, 0 new"
    row = next(line for line in lines if line.lstrip().startswith("count-scifi"))
    assert row.split()[:5] == ["count-scifi", "0/10", "10/10", "1.1e-05", "2"]
    assert row.rstrip().endswith("B better")
    assert any(line.split()[:2] == ["fixed", "BUG-no-such-column-genre-count-books"] for line in lines)


def test_json_output_is_the_model_and_validates_against_its_schema(project: Path) -> None:
    a, b = before_fix(project), after_fix(project)
    result = compare_cli(a, b, "--format", "json")
    assert result.exit_code == 0, result.output
    comparison = Comparison.model_validate_json(result.stdout)
    assert comparison == compare_runs(a, b)
    schema_file = Path(__file__).resolve().parents[1] / "docs" / "schemas" / "comparison.schema.json"
    assert json.loads(schema_file.read_text()) == schema_for(Comparison)
    jsonschema.validate(json.loads(result.stdout), schema_for(Comparison))
    assert compare_cli(a, b, "--format", "json").stdout == result.stdout  # seeded: the same bytes


def test_output_writes_the_file_and_the_verdict_to_stderr(project: Path, tmp_path: Path) -> None:
    a, b = before_fix(project), after_fix(project, repeat_once=False)
    out = tmp_path / "reports" / "compare.json"
    out.parent.mkdir()
    result = compare_cli(a, b, "--format", "json", "--output", out)
    assert result.exit_code == 0 and result.stdout == ""
    assert Comparison.model_validate_json(out.read_bytes()).verdict == "better"
    assert (
        result.stderr.strip()
        == f"{out}: B is better: 1 task improved significantly, 0 worse; 2 bugs fixed, 0 new"
    )
    text = tmp_path / "compare.txt"
    assert compare_cli(a, b, "--output", text).exit_code == 0
    assert text.read_text() == render_comparison_text(compare_runs(a, b))
    assert [path.name for path in out.parent.iterdir()] == ["compare.json"]  # no temp file left


def test_what_is_not_an_evaluated_run_is_refused(project: Path, tmp_path: Path) -> None:
    a = before_fix(project)
    plain = tmp_path / "not-a-run"
    plain.mkdir()
    result = compare_cli(plain, a)
    assert result.exit_code == 2
    assert f"{plain}: not a run folder (it has no manifest.json)" in result.stderr
    missing = tmp_path / "nowhere" / "run-20261201-009"
    result = compare_cli(a, missing)
    assert result.exit_code == 2 and f"{missing}: no such run folder" in result.stderr
    unevaluated = make_run(project, "run-20261201-002", [cheapest_poetry(repetition=1)], evaluate=False)
    result = compare_cli(a, unevaluated)
    assert result.exit_code == 2
    assert f"{unevaluated}: the run has no bug_report.json to compare" in result.stderr
    assert "mcpipechekr evaluate run-20261201-002" in result.stderr
    with pytest.raises(UserError, match="no such run folder"):
        compare_runs(a, tmp_path / "gone")


def test_help_names_the_arguments() -> None:
    result = CliRunner().invoke(main, ["compare", "--help"])
    assert result.exit_code == 0 and "RUN_A RUN_B" in result.output and "--output" in result.output


# --- the HTML fragment -------------------------------------------------------------------------------


def test_html_fragment_is_escaped_and_self_contained(project: Path) -> None:
    a, b = before_fix(project), after_fix(project)
    comparison = compare_runs(a, b)
    hostile = comparison.model_copy(update={"warnings": ['<script>alert("x")</script> & <img src=x>']})
    fragment = render_comparison_html(hostile)
    assert fragment.startswith('<section class="mcpc-compare">') and fragment.rstrip().endswith("</section>")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x&gt;" in fragment
    lowered = fragment.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<link" not in lowered
    assert "http://" not in lowered and "https://" not in lowered and "url(" not in lowered
    assert comparison.verdict_line in fragment
    assert "BUG-no-such-column-genre-count-books" in fragment and "1.1e-05" in fragment


def test_html_fragment_shows_both_runs_kpis_with_the_trend(project: Path) -> None:
    from mcpipechekr.config import KpiConfig
    from mcpipechekr.kpi import kpis_of_run

    a, b = before_fix(project), after_fix(project)
    plain = render_comparison_html(compare_runs(a, b))
    assert "<h3>KPIs</h3><p>run B has no kpi.json" in plain  # evaluated before KPIs: said, not hidden
    kpis_a = kpis_of_run(KpiConfig(), RunDir(a), fixes_claimed=0, regressions=0)
    kpis_b = kpis_of_run(KpiConfig(), RunDir(b), fixes_claimed=1, regressions=0, previous_run=RunDir(a))
    measured = compare_runs(a, b).model_copy(update={"kpis_a": kpis_a, "kpis_b": kpis_b})
    fragment = render_comparison_html(measured)
    table = fragment[fragment.index('<table class="mcpc-kpis">') :].split("</table>")[0]
    rows = table.split("<tr")[2:]  # the header, then one row per figure, in the reports' order
    names = ["call efficiency ratio", "correctness", "tool-selection precision", "gap token cost"]
    assert [row.split("<td>")[1].split("</td>")[0] for row in rows] == [*names, "regression rate"]
    efficiency_a = kpis_a.figure("call_efficiency_ratio")
    efficiency_b = kpis_b.figure("call_efficiency_ratio")
    assert efficiency_a.value is not None and efficiency_b.value is not None
    assert f"<td>{efficiency_a.value:.2f}</td><td>{efficiency_b.value:.2f}</td>" in rows[0]
    # the fix took the calls from 1.50 to 1.05 of the minimum: better, coloured so, and met (<= 1.3)
    assert (efficiency_a.value, efficiency_b.value) == (1.5, 1.05)
    assert rows[0].startswith(' class="mcpc-better"') and "<td>met</td><td>▼ better</td>" in rows[0]
    assert not kpis_b.all_met() and "<p>Not every KPI met in B (docs/kpi.md).</p>" in fragment
