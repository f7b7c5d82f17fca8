"""The sections of a report, each one function from the report's data to an HTML fragment.

A report is its sections in order (`DEFAULT_SECTIONS`). Adding one is one
`Section(key, title, render)` in that list, or passed to `render_report` /
`write_report` as `sections=[*DEFAULT_SECTIONS, Section(...)]`: `render` gets
the `ReportData` and returns markup (escaping every value it takes from a run,
with `_html.esc`), or None to leave the section out of this report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC

from mcpipechekr.artifacts import Bug, Review
from mcpipechekr.artifacts.bug_report import ErroredAttempt
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import folded
from mcpipechekr.kpi import LABELS, format_value, read_kpis, status_text, target_text, trend_text
from mcpipechekr.report._charts import legend, line_chart
from mcpipechekr.report._data import ReportData, RunData
from mcpipechekr.report._html import dom_id, esc, number, tag, text
from mcpipechekr.report._series import METRICS, task_series
from mcpipechekr.report._traces import render_traces, step_id


@dataclass(frozen=True)
class Section:
    """One part of the report: its element id, its heading, and what renders it (None: left out)."""

    key: str
    title: str
    render: Callable[[ReportData], str | None]


def run_anchor(run: RunData) -> str:
    return dom_id("run", run.run_id)


def overview(data: ReportData) -> str:
    """One row per run: when, on which server commit, how many attempts and bugs, what was decided."""
    head = "".join(
        tag("th", name)
        for name in (
            "#",
            "run",
            "status",
            "started",
            "server commit",
            "tasks",
            "traces",
            "bugs",
            "review",
            "fixes",
        )
    )
    rows = []
    for run in data.runs:
        manifest = run.manifest
        if manifest is None:
            cells = [tag("td", "no manifest.json", colspan=8)]
        else:
            commit = (manifest.mcp_server_sha or "-")[:12] + (" (dirty)" if manifest.mcp_server_dirty else "")
            status = manifest.status + (f": {manifest.status_reason}" if manifest.status_reason else "")
            cells = [
                tag("td", esc(status)),
                tag("td", esc(f"{manifest.started_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC")),
                tag("td", tag("code", esc(commit))),
                tag("td", str(len(manifest.task_ids))),
            ]
            cells += [
                tag("td", str(len(run.traces))),
                tag("td", str(len(run.bug_report.bugs)) if run.bug_report else "not evaluated"),
                tag("td", esc(_review_cell(run.review)) if run.review else "-"),
                tag("td", _fixes(run)),
            ]
        link = tag("a", esc(run.run_id), href=f"#{run_anchor(run)}")
        rows.append(
            tag("tr", tag("td", str(run.iteration)) + tag("td", link) + "".join(cells), data_run=run.run_id)
        )
    return tag("table", tag("thead", tag("tr", head)) + tag("tbody", "".join(rows)), class_="runs")


def kpis(data: ReportData) -> str | None:
    """Each run's key figures (kpi.json) against their targets: met, NOT MET or not measured, and the
    trend against the run before. Shown near the top: they say whether the server is where it should be."""
    read = [(run, read_kpis(run.run)) for run in data.runs]
    latest = next((figures for _, figures in reversed(read) if figures is not None), None)
    if latest is None:
        return None
    names = [figure.name for figure in latest.kpis]
    head = tag("th", "run") + "".join(
        tag("th", esc(LABELS[figure.name]) + "<br>" + esc(target_text(figure))) for figure in latest.kpis
    )
    rows = []
    for run, figures in read:
        if figures is None:
            cells = tag("td", "no kpi.json", colspan=len(names) + 1)
        else:
            cells = ""
            for name in names:
                figure = figures.figure(name)
                if figure is None:
                    cells += tag("td", "-")
                    continue
                trend = trend_text(figure)
                cell = esc(f"{format_value(name, figure.value)} {status_text(figure)}")
                cells += tag(
                    "td",
                    cell + ("<br>" + esc(trend) if trend else ""),
                    class_=f"kpi-{figure.status}",
                    title=figure.basis,
                )
            cells += tag("td", "yes" if figures.all_met() else "no")
        rows.append(tag("tr", tag("td", esc(run.run_id)) + cells))
    costs = " → ".join(f"{figures.gap_token_cost:,}" for _, figures in read if figures is not None)
    note = tag(
        "p",
        esc(
            f"Gap token cost loop after loop: {costs} tokens; loops so far: {latest.loop}. "
            "Hover a cell for how it was computed (docs/kpi.md)."
        ),
    )
    table = tag("table", tag("thead", tag("tr", head + tag("th", "all met"))) + tag("tbody", "".join(rows)))
    return table + note


def _review_cell(review: Review) -> str:
    """The decision; an export with the number of issues it wrote (runs/<run>/issues/)."""
    if review.decision == "export":
        return f"export: {len(review.bug_ids)} issue(s)"
    return review.decision


def _fixes(run: RunData) -> str:
    if run.fix is None:
        return "-"
    committed = sum(1 for fix in run.fix.bugs if fix.status == "committed")
    return f"{committed} of {len(run.fix.bugs)} committed"


def charts(data: ReportData) -> str | None:
    """Success, calls, tokens and wasted tokens per task, one point per evaluated run."""
    evaluated = data.evaluated
    if not evaluated:
        return None
    labels = [run.run_id for run in evaluated]
    figures = "".join(
        tag(
            "figure",
            line_chart(metric, task_series(data, metric), labels)
            + tag("figcaption", tag("b", esc(metric.title)) + esc(f" ({metric.unit})")),
            class_="chart",
        )
        for metric in METRICS
    )
    axis = ", ".join(f"#{position} {run_id}" for position, run_id in enumerate(labels, start=1))
    return (
        tag("p", esc(f"One line per task; the x axis is the evaluated runs, oldest first: {axis}."))
        + tag("div", figures, class_="charts")
        + legend(data.task_ids)
    )


def changes(data: ReportData) -> str | None:
    """What changed from each evaluated run to the next: bugs gone and new, calls and tokens per task.

    The place for richer per-task statements (before → after, with their reasons) when the library
    has them; until then this says what the bug reports alone can.
    """
    evaluated = data.evaluated
    if len(evaluated) < 2:
        return None
    parts = []
    for before, after in zip(evaluated, evaluated[1:], strict=False):
        old = {bug.id for bug in before.bug_report.bugs} if before.bug_report else set()
        new = {bug.id for bug in after.bug_report.bugs} if after.bug_report else set()
        lines = [
            tag(
                "li",
                "Gone: " + (", ".join(tag("code", esc(i)) for i in sorted(old - new)) or "none"),
                class_="gone",
            ),
            tag(
                "li",
                "New: " + (", ".join(tag("code", esc(i)) for i in sorted(new - old)) or "none"),
                class_="new",
            ),
        ]
        rows = []
        reports = [run.bug_report for run in (before, after) if run.bug_report]
        holdout = set().union(*(report.holdout_task_ids() for report in reports))
        for task in data.task_ids:
            cells = []
            for metric in METRICS[:3]:
                was = metric.value(before.bug_report, task) if before.bug_report else None
                now = metric.value(after.bug_report, task) if after.bug_report else None
                cells.append(tag("td", esc(_change(metric.format, was, now))))
            label = f"{task} (holdout)" if task in holdout else task
            rows.append(tag("tr", tag("td", esc(label)) + "".join(cells), data_task=task))
        head = tag("tr", "".join(tag("th", name) for name in ("task", "success", "tool calls", "tokens")))
        parts.append(
            tag("h3", esc(f"{before.run_id} → {after.run_id}"))
            + tag("ul", "".join(lines))
            + tag("table", tag("thead", head) + tag("tbody", "".join(rows)), class_="changes")
        )
    return "".join(parts)


def _change(fmt: Callable[[float], str], was: float | None, now: float | None) -> str:
    if was is None and now is None:
        return "-"
    shown = f"{fmt(was) if was is not None else '-'} → {fmt(now) if now is not None else '-'}"
    return shown if was != now else f"{shown} (same)"


def compared(data: ReportData) -> str | None:
    """The first and the last evaluated run compared as `mcpipechekr compare` does (docs/compare.md)."""
    from mcpipechekr.report.compare import compare_runs
    from mcpipechekr.report.compare_html import render_comparison_html

    evaluated = data.evaluated
    if len(evaluated) < 2:
        return None
    first, last = evaluated[0], evaluated[-1]
    try:
        comparison = compare_runs(first.run, last.run)
    except UserError as exc:  # a run the comparison cannot read: said, and the rest of the report stays
        return tag("p", esc(exc.message.splitlines()[0]), class_="muted")
    return render_comparison_html(comparison, heading=f"{first.run_id} → {last.run_id}")


def runs(data: ReportData) -> str:
    """Each run: its problems, checks and lint, tools, bug table, and every trace step by step."""
    return "".join(_run(run) for run in data.runs)


def _run(run: RunData) -> str:
    parts = [tag("h3", esc(f"#{run.iteration} {run.run_id}"))]
    if run.manifest is not None:
        providers = run.manifest.providers
        parts.append(
            tag("p", esc(f"Server {run.manifest.server.name}; phase 1 {providers.phase1 or '-'}, "
                         f"phase 2 {providers.phase2 or 'analyzers only'}."), class_="muted")
        )  # fmt: skip
    if run.problems:
        items = "".join(tag("li", esc(problem)) for problem in run.problems)
        parts.append(
            tag("div", tag("b", "Unreadable artifacts (left out):") + tag("ul", items), class_="problems")
        )
    parts.append(_checks(run))
    parts.append(_tools(run))
    parts.append(tag("h4", "Bugs"))
    parts.append(bug_table(run))
    parts.append(tag("h4", "Traces"))
    parts.append(render_traces(run))
    return tag("section", "".join(parts), class_="run", id=run_anchor(run), data_run=run.run_id)


def _checks(run: RunData) -> str:
    lines = []
    if run.check_report is not None:
        s = run.check_report.summary
        lines.append(
            f"check: {s.passed} passed, {s.failed} failed, {s.warned} warned, {s.skipped} skipped"
            + (f", {s.expected_failures} expected failure(s)" if s.expected_failures else "")
        )
    if run.tef_report is not None:
        s = run.tef_report.summary
        lines.append(
            f"lint: {s.tools} tool(s), {s.errors} error(s), {s.warnings} warning(s), "
            f"{s.overlaps} overlapping pair(s), {s.misleading_tools} misleading tool(s), "
            f"{s.security_findings} security finding(s)"
        )
    return "".join(tag("p", esc(line), class_="summary-line") for line in lines)


def _tools(run: RunData) -> str:
    if run.tools is None:
        return ""
    items = "".join(
        tag(
            "li",
            tag("code", esc(tool.name)) + " " + tag("span", text(tool.description or "(no description)")),
        )
        for tool in run.tools.tools
    )
    return tag(
        "details",
        tag("summary", esc(f"{len(run.tools.tools)} tool(s) as the agent saw them")) + tag("ul", items),
        class_="tools",
    )


def bug_table(run: RunData) -> str:
    """The run's bugs, most costly first as in bug_report.json, each evidence step a link into the traces."""
    if run.bug_report is None:
        return tag("p", "Not evaluated (no bug_report.json).", class_="muted")
    errored = _errored(run.bug_report.errored)
    if not run.bug_report.bugs:
        return errored + tag("p", "No bugs.", class_="muted")
    fixes = {fix.bug_id: fix.status for fix in run.fix.bugs} if run.fix else {}
    head = "".join(
        tag("th", name)
        for name in (
            "bug",
            "severity",
            "tool",
            "cost (tokens)",
            "who can fix",
            "fix",
            "what happened",
            "evidence",
        )
    )
    ranked, inside = folded(run.bug_report.bugs)
    rows = "".join(_bug_row(run, bug, fixes.get(bug.id), inside.get(bug.id, [])) for bug in ranked)
    notes = "".join(tag("li", esc(note)) for note in run.bug_report.notes)
    return (
        errored
        + tag("table", tag("thead", tag("tr", head)) + tag("tbody", rows), class_="bugs", data_run=run.run_id)
        + (tag("ul", notes, class_="notes") if notes else "")
    )


def _errored(errored: list[ErroredAttempt]) -> str:
    """The attempts that are no answer, first and apart: no figure of the run counts them."""
    if not errored:
        return ""
    items = "".join(tag("li", esc(f"{item.task_id} ({item.trace}): {item.reason}")) for item in errored)
    head = tag(
        "p",
        esc(f"{len(errored)} attempt(s) errored (an infrastructure failure) and are in no figure:"),
        class_="status-errored",
    )
    return head + tag("ul", items, class_="errored")


def _bug_row(run: RunData, bug: Bug, fix_status: str | None, covers: Sequence[Bug] = ()) -> str:
    """One ranked bug; `covers` are the findings with no cost of their own that it prices."""
    total = bug.token_cost_of_gap * bug.occurrences
    cost = f"{number(total)} = {number(bug.token_cost_of_gap)} × {bug.occurrences}"
    what = tag("div", text(bug.trigger)) + tag(
        "details",
        tag("summary", "observed / expected") + tag("p", text(bug.observed)) + tag("p", text(bug.expected)),
    )
    if covers:
        what += tag(
            "p",
            "also covers, at no cost of its own: "
            + ", ".join(tag("code", esc(other.id)) for other in covers),
            class_="covers",
        )
    cells = [
        tag("td", tag("code", esc(bug.id))),
        tag("td", esc(bug.severity), class_=f"severity severity-{bug.severity}"),
        tag("td", tag("code", esc(bug.tool)) if bug.tool else "-"),
        tag("td", esc(cost), class_="cost", data_tokens=total),
        tag("td", esc(bug.fixable_by)),
        tag("td", esc(fix_status or "-")),
        tag("td", what),
        tag("td", _evidence_links(run, bug)),
    ]
    return tag("tr", "".join(cells), data_bug_id=bug.id, class_=f"severity-{bug.severity}")


def _evidence_links(run: RunData, bug: Bug) -> str:
    links = []
    for evidence in bug.evidence:
        data = run.trace_by_path(evidence.trace)
        for step in evidence.steps:
            label = f"{evidence.task_id} #{step}"
            if data is None or step >= len(data.trace.steps):
                links.append(tag("span", esc(label + " (not in the run's traces)"), class_="missing"))
                continue
            target = step_id(run.run_id, data.stem, step)
            links.append(tag("a", esc(label), href=f"#{target}", class_="evidence", data_target=target))
    return " ".join(links) or "-"


DEFAULT_SECTIONS: tuple[Section, ...] = (
    Section("overview", "Runs", overview),
    Section("kpis", "Key figures against their targets", kpis),
    Section("charts", "Per task across iterations", charts),
    Section("changes", "Changes between iterations", changes),
    Section("compare", "First and last iteration compared", compared),
    Section("runs", "Bugs and traces", runs),
)
"""The sections of every report, in order; see the module docstring to add one."""
