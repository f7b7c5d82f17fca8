"""KPIs: figures worked out by hand from run folders, trends across runs, config errors, the loop's stop."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.artifacts import BugReport, RunDir, write_model
from mcpipechekr.artifacts.kpi import KpiReport
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.config import KpiConfig, load_config
from mcpipechekr.kpi import kpi_lines, kpis_of_run, read_kpis, trend_text
from mcpipechekr.session_summary import render_session_summary
from mcpipechekr.steps.session import kpis_reached, loop_ends_before_review, no_server_bugs_left

AT = datetime(2025, 1, 14, 12, 0, tzinfo=UTC)
HASH = "sha256:" + "0" * 64


def stats(task_id: str, runs: int, successes: int, *, undecided: int = 0, min_calls=None, mean_calls=None):
    return {
        "task_id": task_id,
        "runs": runs,
        "successes": successes,
        "undecided": undecided,
        "success_rate": successes / max(1, runs - undecided),
        "wilson_low": 0.0,
        "wilson_high": 1.0,
        "pass_at_k": 0.0,
        "pass_hat_k": 0.0,
        "min_calls": min_calls,
        "mean_calls": mean_calls,
    }


def bug(slug: str, gap: int, occurrences: int) -> dict:
    return {
        "id": f"EFF-{slug}",
        "type": "efficiency",
        "severity": "medium",
        "source": "analyzer",
        "trigger": "t",
        "observed": "o",
        "expected": "e",
        "token_cost_observed": gap,
        "token_cost_optimal": 0,
        "token_cost_of_gap": gap,
        "occurrences": occurrences,
    }


def run_folder(root: Path, run_id: str, tasks: list[dict], bugs: list[dict], precisions=None) -> RunDir:
    run = RunDir(root / "runs" / run_id)
    run.root.mkdir(parents=True)
    report = {"run_id": run_id, "phase1_provider": "demo", "evaluated_at": AT, "tasks": tasks, "bugs": bugs}
    write_model(run.bug_report, BugReport.model_validate(report))
    if precisions is not None:
        tools = [{"name": f"tool{i}", "precision": p} for i, p in enumerate(precisions)]
        tef = {
            "generated_at": AT,
            "server": "s",
            "tools_hash": HASH,
            "selector": "lexical-bm25",
            "selection_cases": 6,
            "tools": tools,
        }
        write_model(run.tef_report, TefReport.model_validate(tef))
    return run


def first_run(root: Path) -> RunDir:
    """By hand: calls made 4x3 + 2x3 = 18 against minimum 4x2 + 2x3 = 14 (task c has no minimum):
    18/14 = 1.2857 <= 1.3, met. Correct 3 + 2 = 5 of 4 + 2 + 0 decided (c is undecided): 0.8333 < 0.95,
    not met. Precision (1.0 + 0.8) / 2 = 0.9 (tool2 never picked) >= 0.85, met. Gap 100x2 + 50x1 = 250
    with no run before: not measured. No fix claimed yet: regression rate not measured."""
    tasks = [
        stats("a", 4, 3, min_calls=2, mean_calls=3.0),
        stats("b", 2, 2, min_calls=3, mean_calls=3.0),
        stats("c", 2, 0, undecided=2, mean_calls=5.0),
    ]
    return run_folder(root, "run-20250114-001", tasks, [bug("a", 100, 2), bug("b", 50, 1)], [1.0, 0.8, None])


def test_each_kpi_of_a_run_matches_the_hand_computed_figure(tmp_path: Path) -> None:
    run = first_run(tmp_path)
    kpis = kpis_of_run(KpiConfig(), run, fixes_claimed=0, regressions=0)
    got = {kpi.name: (kpi.value, kpi.status) for kpi in kpis.kpis}
    assert got == {
        "call_efficiency_ratio": (1.2857, "met"),
        "correctness": (0.8333, "not_met"),
        "selection_precision": (0.9, "met"),
        "gap_cost_falling": (250, "not_measured"),
        "regression_rate": (None, "not_measured"),
    }
    assert kpis.gap_token_cost == 250 and kpis.loop == 1 and kpis.previous_run_id is None
    figure = kpis.figure("call_efficiency_ratio")
    assert figure is not None
    assert figure.basis == (
        "18 calls made / 14 minimum calls over 2 task(s), 6 attempt(s); "
        "1 task(s) without a baseline minimum left out"
    )
    assert kpis.figure("correctness").basis == "5 correct of 6 decided answer(s) (2 undecided left out)"
    assert kpis.figure("regression_rate").basis == "no fix claimed yet in this session"
    assert not kpis.all_met()
    assert kpi_lines(kpis)[-1] == "  not every KPI met yet"


def test_a_kpi_that_cannot_be_computed_is_not_measured_never_a_number(tmp_path: Path) -> None:
    run = run_folder(tmp_path, "run-20250114-001", [stats("a", 2, 0, undecided=2, mean_calls=4.0)], [])
    kpis = kpis_of_run(KpiConfig(), run, fixes_claimed=None, regressions=None)
    unmeasured = {kpi.name: kpi.basis for kpi in kpis.kpis if kpi.status == "not_measured"}
    assert unmeasured == {
        "call_efficiency_ratio": "no answered task has a baseline minimum of calls (runs/baseline.json)",
        "correctness": "no answer was checked or judged (no baseline values, no phase-2 model)",
        "selection_precision": "no tef_report.json: the lint did not run",
        "regression_rate": "no findings home to count fixes in",
    }
    assert all(kpis.figure(name).value is None for name in unmeasured)
    gap = kpis.figure("gap_cost_falling")
    assert (gap.value, gap.status) == (0, "met")  # no bug: no gap to fall from


def test_null_turns_a_target_off_and_off_targets_do_not_block_all_met(tmp_path: Path) -> None:
    run = first_run(tmp_path)
    targets = KpiConfig(correctness=None, gap_cost_falling=None, regression_rate=None)
    kpis = kpis_of_run(targets, run, fixes_claimed=0, regressions=0)
    assert [kpi.status for kpi in kpis.kpis] == ["met", "off", "met", "off", "off"]
    assert kpis.all_met()


def test_trend_against_the_previous_run(tmp_path: Path) -> None:
    before = first_run(tmp_path)
    write_model(before.kpi, kpis_of_run(KpiConfig(), before, fixes_claimed=0, regressions=0))
    # By hand: 4x2 + 2x3 = 14 calls for 14 minimum → 1.0; 6 of 6 correct; precision 0.85;
    # gap 40x1 = 40 < 250: met; 0 regressions for 2 fixes: 0, met.
    after = run_folder(
        tmp_path,
        "run-20250114-002",
        [stats("a", 4, 4, min_calls=2, mean_calls=2.0), stats("b", 2, 2, min_calls=3, mean_calls=3.0)],
        [bug("a", 40, 1)],
        [0.9, 0.8],
    )
    kpis = kpis_of_run(KpiConfig(), after, fixes_claimed=2, regressions=0, previous_run=before, loop=2)
    got = {kpi.name: (kpi.value, kpi.status, kpi.previous, kpi.trend) for kpi in kpis.kpis}
    assert got == {
        "call_efficiency_ratio": (1.0, "met", 1.2857, "better"),
        "correctness": (1.0, "met", 0.8333, "better"),
        "selection_precision": (0.85, "met", 0.9, "worse"),
        "gap_cost_falling": (40, "met", 250, "better"),
        "regression_rate": (0.0, "met", None, None),
    }
    assert kpis.previous_run_id == before.run_id and kpis.loop == 2
    assert kpis.figure("gap_cost_falling").target == 250
    assert trend_text(kpis.figure("correctness")) == "▲ better (was 83.3%)"
    assert trend_text(kpis.figure("call_efficiency_ratio")) == "▼ better (was 1.29)"
    assert trend_text(kpis.figure("selection_precision")) == "▼ worse (was 0.90)"
    assert kpis.all_met()
    write_model(after.kpi, kpis)

    ending = "every configured KPI is met (after 2 iteration(s))"
    text = render_session_summary([before, after], ending=ending)
    assert "**The loop ended: every configured KPI is met (after 2 iteration(s)).**" in text
    assert "| run-20250114-001 | 1 | 1.29 met | 83.3% NOT MET | 0.90 met | 250 tokens not measured " in text
    assert "| run-20250114-002 | 2 | 1.00 met ▼ better (was 1.29) | 100% met ▲ better (was 83.3%) |" in text
    assert "Gap token cost loop after loop: 250 → 40 tokens; loops so far: 2." in text


def test_gap_cost_not_falling_is_not_met(tmp_path: Path) -> None:
    before = first_run(tmp_path)
    write_model(before.kpi, kpis_of_run(KpiConfig(), before, fixes_claimed=0, regressions=0))
    after = run_folder(tmp_path, "run-20250114-002", [stats("a", 1, 1)], [bug("a", 250, 1)])
    kpis = kpis_of_run(KpiConfig(), after, fixes_claimed=1, regressions=1, previous_run=before, loop=2)
    gap, regression = kpis.figure("gap_cost_falling"), kpis.figure("regression_rate")
    assert (gap.value, gap.status, gap.trend) == (250, "not_met", "same")
    assert (regression.value, regression.status) == (1.0, "not_met")


def config_file(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("server:\n  command: python\n" + textwrap.dedent(extra), encoding="utf-8")
    return path


def test_config_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = config_file(
        tmp_path,
        """
        kpi:
          correctness: 1.5
          call_efficiency_ratio: fast
          latency: 3
        loop:
          stop_when: bored
        """,
    )
    with pytest.raises(ConfigFileError) as info:
        load_config(path, environ={})
    problems = [str(problem) for problem in info.value.problems]
    assert problems[0] == f"{path}:5: field 'kpi.correctness': must be at most 1"
    assert problems[1] == f"{path}:6: field 'kpi.call_efficiency_ratio': must be a number"
    assert problems[2].startswith(f"{path}:7: field 'kpi.latency': unknown field (known: ")
    assert problems[3].startswith(f"{path}:9: field 'loop.stop_when': ")
    assert "no_server_bugs" in problems[3] and "kpis_met" in problems[3]


def loop_config(tmp_path: Path, stop_when: str):
    return load_config(config_file(tmp_path, f"loop:\n  stop_when: {stop_when}\n"), environ={})


def test_the_loop_stops_on_kpis_met_only_when_asked_and_every_target_is_met(tmp_path: Path) -> None:
    before = first_run(tmp_path)
    write_model(before.kpi, kpis_of_run(KpiConfig(), before, fixes_claimed=0, regressions=0))
    after = run_folder(
        tmp_path, "run-20250114-002", [stats("a", 4, 4, min_calls=2, mean_calls=2.0)], [], [0.9]
    )
    kpis = kpis_of_run(KpiConfig(), after, fixes_claimed=2, regressions=0, previous_run=before)
    write_model(after.kpi, kpis)
    kpis_met = loop_config(tmp_path, "kpis_met")
    assert kpis_reached(kpis_met, before) is None  # correctness not met, two figures not measured
    assert kpis_reached(kpis_met, after) == (
        "every configured KPI is met in run-20250114-002 (call efficiency ratio, correctness, "
        "tool-selection precision, gap token cost, regression rate): loop.stop_when is kpis_met"
    )
    assert kpis_reached(loop_config(tmp_path, "no_server_bugs"), after) is None  # the default: fixes decide
    assert kpis_reached(kpis_met, RunDir(tmp_path / "runs" / "run-20250114-003")) is None  # no kpi.json


def test_the_loop_ends_before_a_review_with_no_server_side_bug_to_approve(tmp_path: Path) -> None:
    agent_only = {**bug("wander", 300, 1), "fixable_by": "agent"}
    priced_by_another = {**bug("inside", 0, 1), "see_also": ["EFF-wander"]}
    server = run_folder(tmp_path, "run-20250114-001", [stats("a", 1, 1)], [bug("a", 100, 1), agent_only])
    none_left = run_folder(tmp_path, "run-20250114-002", [stats("a", 1, 1)], [agent_only, priced_by_another])
    clean = run_folder(tmp_path, "run-20250114-003", [stats("a", 1, 1)], [])
    default = loop_config(tmp_path, "no_server_bugs")
    assert no_server_bugs_left(server) is None and loop_ends_before_review(default, server) is None
    assert no_server_bugs_left(none_left) == (
        "run-20250114-002 has no server-side bug left to fix "
        "(1 agent-behaviour item(s) with no server-side fix)"
    )
    assert loop_ends_before_review(default, clean) == "run-20250114-003 has no server-side bug left to fix"
    # kpis_met ends there too: nothing would be fixed; and at its KPIs first, with bugs still open
    kpis_met = loop_config(tmp_path, "kpis_met")
    assert loop_ends_before_review(kpis_met, none_left) == no_server_bugs_left(none_left)


def test_read_kpis_of_a_run_without_or_with_a_broken_kpi_json(tmp_path: Path) -> None:
    run = first_run(tmp_path)
    assert read_kpis(run) is None
    run.kpi.write_text("{", encoding="utf-8")
    assert read_kpis(run) is None
    write_model(run.kpi, kpis_of_run(KpiConfig(), run, fixes_claimed=0, regressions=0))
    assert isinstance(read_kpis(run), KpiReport)


def test_compare_shows_both_runs_kpis_and_the_trend_from_a_to_b(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from mcpipechekr.report.compare_text import kpi_rows

    before = first_run(tmp_path)
    kpis_a = kpis_of_run(KpiConfig(), before, fixes_claimed=0, regressions=0)
    write_model(before.kpi, kpis_a)
    after = run_folder(
        tmp_path, "run-20250114-002", [stats("a", 4, 4, min_calls=2, mean_calls=2.0)], [], [0.9]
    )
    kpis_b = kpis_of_run(KpiConfig(), after, fixes_claimed=2, regressions=0, previous_run=before)
    text = "\n".join(kpi_rows(SimpleNamespace(kpis_a=kpis_a, kpis_b=kpis_b)))
    assert "KPIs (docs/kpi.md; every KPI met in B):" in text
    assert "▲ better" in text.splitlines()[4] and text.splitlines()[4].split()[:5] == [
        "correctness",
        "≥",
        "95.0%",
        "83.3%",
        "100%",
    ]
