"""A whole run evaluated: the bug report, aggregation, statistics, determinism, CLI and model evaluator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, text_reply
from trace_builder import call, make_trace

from mcpipechekr.artifacts import BugReport, read_model, read_trace, write_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.cli import main
from mcpipechekr.config import ConfigOverrides, load_config
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.evaluate.stats import pass_at_k, pass_hat_k, wilson_interval

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
RUN_ID = "run-20261201-001"
T0 = "2026-12-01T09:00:00Z"

TASKS = {
    "tasks": [
        {
            "task_id": "find-first",
            "prompt": "When was Ron Chinn first mentioned?",
            "task_type": "deterministic",
            "expected_tool": "query_email_database",
            "min_calls": 1,
        },
        {
            "task_id": "office-move",
            "prompt": "Subjects and dates of the 2024 office-move emails.",
            "task_type": "deterministic",
            "expected_tool": "query_email_database",
            "min_calls": 1,
        },
        {
            "task_id": "count-dana",
            "prompt": "How many emails did Dana send in 2019?",
            "task_type": "deterministic",
            "expected_tool": "count_emails",
            "min_calls": 1,
        },
    ]
}


def baseline_entry(task_id: str, result, tokens: int) -> BaselineEntry:
    return BaselineEntry(
        task_id=task_id,
        result=result,
        plausibility_score=1.0,
        evaluator="rules",
        timestamp=T0,
        method="reference_calls",
        calls=1,
        reference_tokens=tokens,
    )


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project with a run of six traces (two repetitions of each fixture), tasks and a baseline."""
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    config = {"server": {"command": "python", "args": ["server.py"]}, "paths": {"runs": "runs"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    traces = tmp_path / "runs" / RUN_ID / "traces"
    traces.mkdir(parents=True)
    for source in sorted(FIXTURES.glob("*.json")):
        shutil.copy(source, traces / source.name)
        if not source.name.startswith("count-dana"):
            second = read_trace(source).model_copy(update={"repetition": 2})
            write_model(traces / source.name.replace("r001", "r002"), second)
    wrong = make_trace(
        "count-dana",
        [call("count_emails", {"sender": "Dana Whitfield", "date_from": "2019-01-01"}, {"count": 30})],
        answer="Dana sent 30 emails in 2019.",
        repetition=2,
    )
    write_model(traces / "count-dana__demo__r002.json", wrong)
    baseline = Baseline(
        generated_at=T0,
        tasks=[
            baseline_entry("count-dana", {"values": [[29]], "match": "all"}, 20),
            baseline_entry("find-first", {"values": [[4089, "2013-05-14T10:12:37"]], "match": "any"}, 200),
        ],
    )
    write_model(tmp_path / "runs" / "baseline.json", baseline)
    return tmp_path / "config.yaml", tmp_path / "runs" / RUN_ID


def test_stats_match_known_values() -> None:
    low, high = wilson_interval(4, 5)
    assert (round(low, 3), round(high, 3)) == (0.376, 0.964)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    assert pass_at_k(5, 4, 3) == 1.0 and pass_hat_k(5, 4, 3) == pytest.approx(0.4)
    assert pass_at_k(5, 1, 2) == pytest.approx(0.4) and pass_hat_k(5, 1, 2) == 0.0


def test_run_report_merges_repetitions_prices_and_sorts(project: tuple[Path, Path]) -> None:
    config_path, run = project
    report = evaluate_run(load_config(config_path), run)
    assert report == read_model(run / "bug_report.json", BugReport)
    bugs = {bug.id: bug for bug in report.bugs}
    gap = bugs["GAP-no-date-sort-query-email-database"]
    assert gap.occurrences == 2 and gap.task_ids == ["find-first"] and gap.type == "feature_gap"
    assert [e.trace for e in gap.evidence] == [
        "traces/find-first__demo__r001.json",
        "traces/find-first__demo__r002.json",
    ]
    assert gap.token_cost_of_gap > 0 and len(gap.details["windows"]) == 3
    assert "2011-01-01..2011-12-31 (nothing)" in gap.observed
    fts = bugs["BUG-no-such-column-fts-rank-query-email-database"]
    assert fts.occurrences == 2 and fts.token_cost_of_gap > 0 and fts.severity == "high"
    assert fts.details["error_text"].endswith("no such column: fts.rank")
    wrong = bugs["COR-wrong-answer-count-dana"]
    assert wrong.occurrences == 1 and wrong.evidence[0].trace == "traces/count-dana__demo__r002.json"
    gaps = [bug.token_cost_of_gap for bug in report.bugs]
    assert gaps == sorted(gaps, reverse=True)
    stats = {s.task_id: s for s in report.tasks}
    dana = stats["count-dana"]
    assert (dana.runs, dana.successes, dana.k) == (2, 1, 2)
    assert dana.pass_at_k == 1.0 and dana.pass_hat_k == 0.0 and dana.tokens_source == "estimated"
    first = stats["find-first"]
    assert first.successes == 2 and first.min_calls == 1 and first.mean_calls == 3 and first.call_ratio == 3
    assert 0 < first.efficiency_ratio < 1
    office = stats["office-move"]
    assert (office.successes, office.undecided, office.correctness) == (0, 2, "unchecked"), "no baseline"
    narrative = (run / "phase2_narrative.md").read_text()
    assert "## Highest gap" in narrative and report.bugs[0].id in narrative
    assert "| count-dana | demo | 2 | 1/2 |" in narrative


def test_evaluating_twice_is_byte_identical_apart_from_the_time(project: tuple[Path, Path]) -> None:
    config_path, run = project
    config = load_config(config_path)
    evaluate_run(config, run)
    first = json.loads((run / "bug_report.json").read_bytes())
    narrative = (run / "phase2_narrative.md").read_bytes()
    evaluate_run(config, run)
    second = json.loads((run / "bug_report.json").read_bytes())
    assert first.pop("evaluated_at") and second.pop("evaluated_at")
    assert json.dumps(first) == json.dumps(second)
    assert (run / "phase2_narrative.md").read_bytes() == narrative


def test_a_clean_run_has_an_empty_bug_list(tmp_path: Path, project: tuple[Path, Path]) -> None:
    config_path, run = project
    for path in run.joinpath("traces").glob("*.json"):
        if not path.name.startswith("count-dana__demo__r001"):
            path.unlink()
    report = evaluate_run(load_config(config_path), run)
    assert report.bugs == [] and report.tasks[0].success_rate == 1.0
    assert "None: every trace ran as well as the rules can tell." in (run / "phase2_narrative.md").read_text()


def test_cli_evaluate_text_and_json(project: tuple[Path, Path]) -> None:
    config_path, run = project
    result = CliRunner().invoke(
        main, ["evaluate", RUN_ID, "--config", str(config_path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "GAP-no-date-sort-query-email-database" in result.output and "x2" in result.output
    result = CliRunner().invoke(
        main, ["evaluate", str(run), "--config", str(config_path), "--format", "json"], catch_exceptions=False
    )
    assert BugReport.model_validate_json(result.stdout).run_id == RUN_ID
    result = CliRunner().invoke(main, ["evaluate", "run-20990101-001", "--config", str(config_path)])
    assert result.exit_code == 2 and "no run `run-20990101-001`" in result.output


def test_phase2_model_writes_the_narrative_and_adds_validated_bugs(project: tuple[Path, Path]) -> None:
    config_path, run = project
    answer = {
        "narrative": "Agents walk the archive year by year; add a date sort first.",
        "bugs": [
            {
                "type": "description",
                "severity": "low",
                "tool": "count_emails",
                "task_id": "count-dana",
                "slug": "sender matching unclear",
                "trigger": "counting by sender",
                "observed": "the agent left out date_to",
                "expected": "the description says both bounds are needed for one year",
                "acceptance_criteria": ["count_emails' description gives a one-year example"],
                "trace": "traces/count-dana__demo__r002.json",
                "steps": [0],
            },
            {"type": "bug", "slug": "no trigger given"},
            {
                "type": "feature_gap",
                "tool": "query_email_database",
                "slug": "no date sort",
                "trigger": "t",
                "observed": "o",
                "expected": "e",
            },
        ],
    }
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply(json.dumps(answer)))
        data = yaml.safe_load(config_path.read_text())
        data["providers"] = {"endpoints": {"scripted": {"base_url": fake.base_url}}}
        config_path.write_text(yaml.safe_dump(data))
        # A per-call provider is an override applied at load, as the --phase2-provider flag is.
        overrides = ConfigOverrides(providers={"phase2": "scripted/evaluator"})
        report = evaluate_run(load_config(config_path, overrides), run)
        prompt = json.dumps(fake.requests[0]["messages"])
    assert report.phase2_provider == "scripted/evaluator"
    added = [bug for bug in report.bugs if bug.source == "llm"]
    assert [bug.id for bug in added] == ["DSC-sender-matching-unclear-count-emails"]
    assert added[0].evidence[0].steps == [0] and added[0].token_cost_of_gap == 0
    assert any("bug #2 was dropped: invalid" in note for note in report.notes)
    assert any(
        "bug #3 (GAP-no-date-sort-query-email-database) was already reported" in note for note in report.notes
    )
    assert "You review how an AI agent used the tools" in prompt and "find-first__demo__r001" in prompt
    narrative = (run / "phase2_narrative.md").read_text()
    assert narrative.index("add a date sort first") < narrative.index("## Bugs")


def test_forked_workers_give_the_serial_report(
    project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcpipechekr.evaluate.orchestrate as orchestrate

    config_path, run = project
    config = load_config(config_path)
    serial = evaluate_run(config, run).model_dump(exclude={"evaluated_at"})
    monkeypatch.setattr(orchestrate, "PARALLEL_FROM", 2)
    monkeypatch.setattr(orchestrate, "PARALLEL_MIN_CORES", 2)
    monkeypatch.setattr(orchestrate.os, "cpu_count", lambda: 2)
    assert evaluate_run(config, run).model_dump(exclude={"evaluated_at"}) == serial
