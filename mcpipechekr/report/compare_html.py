"""A comparison as an HTML fragment, for a page that shows a project's runs.

One `<section>` with its own small style sheet, every class prefixed
`mcpc-compare` so it cannot restyle the page it is put in; no script, no
font, no image, nothing fetched, so the page works offline and shows the same
thing in any browser. Every text from the runs (task ids, server names,
warnings) is escaped: a server's name is whatever its author typed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from mcpipechekr.artifacts.comparison import Comparison
from mcpipechekr.report.compare_text import NO_KPIS, describe_run, kpi_table, split_rows, task_cells

STYLE = """
.mcpc-compare table { border-collapse: collapse; margin: 0.5em 0 1em; }
.mcpc-compare th, .mcpc-compare td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; }
.mcpc-compare .mcpc-better { color: #176f2c; }
.mcpc-compare .mcpc-worse { color: #a4161a; }
.mcpc-compare .mcpc-mixed { color: #8a5a00; }
.mcpc-compare .mcpc-verdict { font-weight: bold; }
.mcpc-compare .mcpc-split-warning { color: #a4161a; font-weight: bold; }
""".strip()

_CLASS = {"better": "mcpc-better", "worse": "mcpc-worse", "mixed": "mcpc-mixed"}
_TREND_CLASS = {"better": "mcpc-better", "worse": "mcpc-worse"}
_BUG_CLASS = {"fixed": "mcpc-better", "new": "mcpc-worse"}


def _row(cells: Sequence[str], tag: str = "td", css: str | None = None) -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<tr{attribute}>" + "".join(f"<{tag}>{escape(cell)}</{tag}>" for cell in cells) + "</tr>"


def _table(header: Sequence[str], rows: list[str]) -> str:
    return f"<table><thead>{_row(header, 'th')}</thead><tbody>{''.join(rows)}</tbody></table>"


def render_comparison_html(comparison: Comparison, *, heading: str = "Comparison of two runs") -> str:
    """The comparison as one self-contained `<section>`: runs, changes, tasks, KPIs, bugs, verdict."""
    parts = [
        '<section class="mcpc-compare">',
        f"<style>{STYLE}</style>",
        f"<h2>{escape(heading)}</h2>",
        "<ul>",
        f"<li>A: {escape(describe_run(comparison.a))}</li>",
        f"<li>B: {escape(describe_run(comparison.b))}</li>",
        "</ul>",
        f'<p class="mcpc-verdict {_CLASS.get(comparison.verdict, "")}">{escape(comparison.verdict_line)}</p>',
    ]
    if comparison.changes:
        parts.append("<h3>Changed from A to B</h3><ul>")
        parts.extend(f"<li>{escape(change)}</li>" for change in comparison.changes)
        parts.append("</ul>")
    if comparison.warnings:
        parts.append("<h3>Warnings</h3><ul>")
        parts.extend(f"<li>{escape(warning)}</li>" for warning in comparison.warnings)
        parts.append("</ul>")
    if comparison.splits:
        header, *rows = split_rows(comparison)
        parts.append(
            "<h3>Train and holdout</h3><p>The fix agent sees only the bugs of train tasks; holdout tasks "
            "tell whether its fixes help beyond them.</p>"
        )
        parts.append(
            _table(header, [_row(row, css=_TREND_CLASS.get(row[-1])) for row in rows]).replace(
                "<table>", '<table class="mcpc-splits">', 1
            )
        )
        parts.extend(
            f'<p class="mcpc-split-warning">Warning: {escape(warning)}</p>'
            for warning in comparison.split_warnings
        )
    parts.append(
        "<h3>Tasks</h3><p>Success: Fisher's exact test, two-sided. Calls and tokens per attempt: "
        f"A → B (B − A; 95% bootstrap interval), * significant; alpha {comparison.alpha:g}.</p>"
    )
    split = bool(comparison.splits)
    task_rows = [
        _row([*task_cells(task, split=split), task.reason], css=_CLASS.get(task.verdict))
        for task in comparison.tasks
    ]
    parts.append(
        _table(
            [
                "task",
                *(["split"] if split else []),
                "success A",
                "success B",
                "p",
                "calls",
                "tokens",
                "verdict",
                "why",
            ],
            task_rows,
        )
    )
    kpis = kpi_table(comparison)
    if kpis is None:
        parts.append(f"<h3>KPIs</h3><p>{escape(NO_KPIS)}</p>")
    else:
        verdict, (header, *rows) = kpis
        parts.append(f"<h3>KPIs</h3><p>{escape(verdict[:1].upper() + verdict[1:])} (docs/kpi.md).</p>")
        kpi_html = [_row(row, css=_TREND_CLASS.get(row[-1].split(" ")[-1])) for row in rows]
        parts.append(_table(header, kpi_html).replace("<table>", '<table class="mcpc-kpis">', 1))
    parts.append("<h3>Bugs</h3>")
    bug_rows = [
        _row(
            [
                bug.status.replace("_", " "),
                bug.id,
                bug.severity,
                bug.tool or "",
                f"{bug.occurrences_a} → {bug.occurrences_b}",
            ],
            css=_BUG_CLASS.get(bug.status),
        )
        for bug in comparison.bugs
    ]
    parts.append(
        _table(["status", "id", "severity", "tool", "occurrences A → B"], bug_rows)
        if bug_rows
        else "<p>No bugs in either run.</p>"
    )
    parts.append("</section>")
    return "\n".join(parts) + "\n"
