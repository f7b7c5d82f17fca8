"""Key figures of a run against the targets of config.yaml's `kpi:` section, and how they read.

Why a module of its own: the review, the session summary, report.html,
`compare` and the loop's stop decision all show or use the same five figures,
so they are computed once, here, from the run's artifacts (bug_report.json,
tef_report.json) and the session's regression counts, and written to kpi.json
(`artifacts/kpi.py`) by the evaluation. It sits low in the layers (config and
artifacts only) so every consumer may import it; the regression counts come
from the findings home, which the caller (`steps/kpi.py`) reads and passes in.

The figures (docs/kpi.md):

    call_efficiency_ratio = Σ mean_calls x runs / Σ min_calls x runs   over tasks with a baseline minimum
    correctness           = Σ successes / Σ (runs - undecided)         over every task
    selection_precision   = mean precision of the tools the lint's selector picked (tef_report.json)
    gap_cost_falling      = Σ token_cost_of_gap x occurrences, met below the previous run's (or at 0)
    regression_rate       = regressions / fixes claimed since the session's first run

Blind spots: the precision is a macro mean (each picked tool counts once,
however often it was picked), because tef_report.json keeps per-tool
precisions, not the picks behind them; the regression rate covers the
session up to the moment of the evaluation, not the single run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from mcpipechekr.artifacts import BugReport, RunDir, read_model, utc_now
from mcpipechekr.artifacts.kpi import KpiDirection, KpiFigure, KpiName, KpiReport, KpiStatus, KpiTrend
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.config import KpiConfig
from mcpipechekr.errors import UserError

_T = TypeVar("_T")

LABELS: dict[KpiName, str] = {
    "call_efficiency_ratio": "call efficiency ratio",
    "correctness": "correctness",
    "selection_precision": "tool-selection precision",
    "gap_cost_falling": "gap token cost",
    "regression_rate": "regression rate",
}
"""Each figure's name for people, in the order reports list them."""

_STATUS_WORDS: dict[KpiStatus, str] = {
    "met": "met",
    "not_met": "NOT MET",
    "not_measured": "not measured",
    "off": "off",
}


def gap_token_cost(report: BugReport) -> int:
    """Tokens the run's bugs cost over the optimal call sequences: every bug's gap x its occurrences."""
    return sum(bug.token_cost_of_gap * bug.occurrences for bug in report.bugs)


def compute_kpis(
    targets: KpiConfig,
    report: BugReport,
    *,
    tef: TefReport | None,
    fixes_claimed: int | None,
    regressions: int | None,
    previous: KpiReport | None = None,
    previous_run_id: str | None = None,
    loop: int = 1,
    computed_at: datetime | None = None,
) -> KpiReport:
    """The run's figures, each judged against `targets` and compared with `previous` (the kpi.json of the
    run whose fixes this one followed, if any). `fixes_claimed`/`regressions` are the session's counts from
    the findings home (None: no home to ask)."""
    gap = gap_token_cost(report)
    previous_gap = previous.gap_token_cost if previous is not None else None
    figures = [
        _efficiency(targets.call_efficiency_ratio, report),
        _correctness(targets.correctness, report),
        _precision(targets.selection_precision, tef),
        _gap(bool(targets.gap_cost_falling), gap, previous_gap),
        _regressions(targets.regression_rate, fixes_claimed, regressions),
    ]
    if previous is not None:
        figures = [_with_trend(figure, previous.figure(figure.name)) for figure in figures]
    return KpiReport(
        run_id=report.run_id,
        computed_at=computed_at or utc_now(),
        previous_run_id=previous_run_id or (previous.run_id if previous is not None else None),
        loop=loop,
        gap_token_cost=gap,
        kpis=figures,
    )


def kpis_of_run(
    targets: KpiConfig,
    run_dir: RunDir,
    *,
    fixes_claimed: int | None,
    regressions: int | None,
    previous_run: RunDir | None = None,
    loop: int = 1,
) -> KpiReport:
    """`compute_kpis` from the run folder's bug_report.json and tef_report.json; the trend from
    `previous_run`'s kpi.json when it has one."""
    report = read_model(run_dir.bug_report, BugReport)
    tef = _read_optional(run_dir.tef_report, lambda path: read_model(path, TefReport))
    previous = read_kpis(previous_run) if previous_run is not None else None
    return compute_kpis(
        targets,
        report,
        tef=tef,
        fixes_claimed=fixes_claimed,
        regressions=regressions,
        previous=previous,
        previous_run_id=previous_run.run_id if previous_run is not None else None,
        loop=loop,
    )


def read_kpis(run_dir: RunDir) -> KpiReport | None:
    """The run's kpi.json, or None when it has none (evaluated before KPIs existed) or it is unreadable."""
    return _read_optional(run_dir.kpi, lambda path: read_model(path, KpiReport))


def _read_optional(path: Path, reader: Callable[[Path], _T]) -> _T | None:
    try:
        return reader(path)
    except (FileNotFoundError, UserError):
        return None


def _judge(value: float | None, target: float | None, direction: KpiDirection) -> KpiStatus:
    if target is None or value is None:
        return "not_measured"
    if direction == "at_most":
        return "met" if value <= target + 1e-9 else "not_met"
    if direction == "at_least":
        return "met" if value >= target - 1e-9 else "not_met"
    return "met" if value == 0 or value < target else "not_met"


def _figure(
    name: KpiName, target: float | None, direction: KpiDirection, value: float | None, basis: str
) -> KpiFigure:
    if target is None:
        return KpiFigure(name=name, direction=direction, status="off", basis="turned off in config.yaml")
    rounded = None if value is None else round(value, 4)
    return KpiFigure(
        name=name,
        value=rounded,
        target=target,
        direction=direction,
        status=_judge(rounded, target, direction),
        basis=basis,
    )


def _efficiency(target: float | None, report: BugReport) -> KpiFigure:
    known = [
        stats
        for stats in report.tasks
        if stats.min_calls is not None and stats.mean_calls is not None and stats.runs > 0
    ]
    made = sum((stats.mean_calls or 0.0) * stats.runs for stats in known)
    minimum = sum((stats.min_calls or 0) * stats.runs for stats in known)
    left_out = sum(1 for stats in report.tasks if stats.runs > 0) - len(known)
    if minimum == 0:
        basis = "no answered task has a baseline minimum of calls (runs/baseline.json)"
        return _figure("call_efficiency_ratio", target, "at_most", None, basis)
    attempts = sum(stats.runs for stats in known)
    basis = f"{made:,.0f} calls made / {minimum:,} minimum calls over {len(known)} task(s), "
    basis += f"{attempts} attempt(s)"
    if left_out:
        basis += f"; {left_out} task(s) without a baseline minimum left out"
    return _figure("call_efficiency_ratio", target, "at_most", made / minimum, basis)


def _correctness(target: float | None, report: BugReport) -> KpiFigure:
    decided = sum(stats.runs - stats.undecided for stats in report.tasks)
    correct = sum(stats.successes for stats in report.tasks)
    undecided = sum(stats.undecided for stats in report.tasks)
    if decided <= 0:
        basis = "no answer was checked or judged (no baseline values, no phase-2 model)"
        return _figure("correctness", target, "at_least", None, basis)
    basis = f"{correct} correct of {decided} decided answer(s)"
    if undecided:
        basis += f" ({undecided} undecided left out)"
    return _figure("correctness", target, "at_least", correct / decided, basis)


def _precision(target: float | None, tef: TefReport | None) -> KpiFigure:
    if tef is None:
        return _figure(
            "selection_precision", target, "at_least", None, "no tef_report.json: the lint did not run"
        )
    picked = [tool.precision for tool in tef.tools if tool.precision is not None]
    if not picked:
        basis = f"the selection test picked no tool ({tef.selection_cases} selection case(s))"
        return _figure("selection_precision", target, "at_least", None, basis)
    basis = (
        f"mean precision of the {len(picked)} tool(s) the selector ({tef.selector}) picked, "
        f"{tef.selection_cases} selection case(s)"
    )
    return _figure("selection_precision", target, "at_least", sum(picked) / len(picked), basis)


def _gap(on: bool, gap: int, previous_gap: int | None) -> KpiFigure:
    if not on:
        return _figure("gap_cost_falling", None, "below", None, "")
    if gap == 0:
        return KpiFigure(
            name="gap_cost_falling",
            value=0,
            target=previous_gap,
            direction="below",
            status="met",
            basis="no gap left: the bugs of this run cost no tokens over the optimal calls",
        )
    if previous_gap is None:
        return KpiFigure(
            name="gap_cost_falling",
            value=gap,
            direction="below",
            status="not_measured",
            basis=f"{gap:,} tokens; no previous run in this session to fall from",
        )
    return KpiFigure(
        name="gap_cost_falling",
        value=gap,
        target=previous_gap,
        direction="below",
        status="met" if gap < previous_gap else "not_met",
        basis=f"{gap:,} tokens against {previous_gap:,} in the previous run",
    )


def _regressions(target: float | None, fixes: int | None, regressions: int | None) -> KpiFigure:
    if fixes is None or regressions is None:
        return _figure("regression_rate", target, "at_most", None, "no findings home to count fixes in")
    if fixes == 0:
        basis = "no fix claimed yet in this session"
        return _figure("regression_rate", target, "at_most", None, basis)
    basis = f"{regressions} regression(s) for {fixes} fix(es) claimed in this session"
    return _figure("regression_rate", target, "at_most", regressions / fixes, basis)


def _with_trend(figure: KpiFigure, before: KpiFigure | None) -> KpiFigure:
    if before is None or before.value is None:
        return figure
    update: dict[str, object] = {"previous": before.value}
    if figure.value is not None:
        update["trend"] = trend_of(figure.value, before.value, figure.direction)
    return figure.model_copy(update=update)


def trend_of(value: float, previous: float, direction: KpiDirection) -> KpiTrend:
    """Whether `value` is better than `previous` for a figure whose target lies in `direction`."""
    if abs(value - previous) < 1e-9:
        return "same"
    lower_is_better = direction in ("at_most", "below")
    return "better" if (value < previous) == lower_is_better else "worse"


def format_value(name: KpiName, value: float | None) -> str:
    """A figure as people read it: shares as percentages, the gap in tokens, ratios with two decimals."""
    if value is None:
        return "-"
    if name in ("correctness", "regression_rate"):
        return f"{value:.0%}" if value in (0, 1) else f"{value:.1%}"
    if name == "gap_cost_falling":
        return f"{value:,.0f} tokens"
    return f"{value:.2f}"


def target_text(figure: KpiFigure) -> str:
    """The target as people read it: `≤ 1.30`, `≥ 95%`, `falling (< 1,200 tokens)`."""
    if figure.status == "off":
        return "off"
    if figure.name == "gap_cost_falling":
        return "falling" + (f" (< {figure.target:,.0f})" if figure.target is not None else "")
    sign = "≤" if figure.direction == "at_most" else "≥"
    return f"{sign} {format_value(figure.name, figure.target)}"


def trend_text(figure: KpiFigure) -> str:
    """▲/▼ with the word, against the previous run: `▼ better (was 1.50)`; empty without a previous value."""
    if figure.trend is None or figure.previous is None or figure.value is None:
        return ""
    if figure.trend == "same":
        return f"= same (was {format_value(figure.name, figure.previous)})"
    arrow = "▲" if figure.value > figure.previous else "▼"
    return f"{arrow} {figure.trend} (was {format_value(figure.name, figure.previous)})"


def status_text(figure: KpiFigure) -> str:
    """`met`, `NOT MET`, `not measured` or `off`."""
    return _STATUS_WORDS[figure.status]


def kpi_lines(report: KpiReport) -> list[str]:
    """The figures in a few plain lines, for a terminal: one per figure, then whether all are met."""
    lines = [f"KPIs of {report.run_id} (loop {report.loop}):"]
    for figure in report.kpis:
        label = LABELS[figure.name]
        if figure.status == "off":
            lines.append(f"  {label}: off")
            continue
        trend = trend_text(figure)
        lines.append(
            f"  {label}: {format_value(figure.name, figure.value)} (target {target_text(figure)}): "
            f"{status_text(figure)}" + (f", {trend}" if trend else "") + f" — {figure.basis}"
        )
    lines.append("  every KPI met" if report.all_met() else "  not every KPI met yet")
    return lines
