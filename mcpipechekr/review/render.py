"""The review as a terminal shows it: the figures, the bugs as a table in fix order, KPIs, the narrative.

Apart from the prompt (`prompt.py`) because the loop shows the same review
with nobody to answer it (`review_checkpoint` without a terminal), and the
table must stay readable on a narrow console.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from mcpipechekr.artifacts import Bug, BugReport, RunDir
from mcpipechekr.config import Config
from mcpipechekr.evaluate.aggregate import folded
from mcpipechekr.kpi import kpi_lines, read_kpis
from mcpipechekr.review.bugs import fix_order
from mcpipechekr.review.decision import load_bug_report, why_fixing_off


def show_review(run_dir: RunDir, console: Console, *, config: Config | None = None) -> tuple[BugReport, str]:
    """Print what the reviewer decides on; returns the report shown and the hash of its bytes.

    First the figures (bug count, highest token_cost_of_gap), then the bugs in
    fix order, the run's KPIs against their targets (kpi.json), then the Phase 2
    narrative. ``config`` says whether fixing is on (`Config.fixing_off`), which
    decides what a run without bugs offers.
    """
    report, digest = load_bug_report(run_dir)
    bugs, inside = folded(fix_order(report))
    console.rule(Text(f"Review of {report.run_id}"))
    if not bugs:
        offers = (
            "`export` and `exit` end the session"
            if why_fixing_off(config)
            else "`approve` goes on with nothing to fix, `exit` stops"
        )
        console.print(
            Text(
                f"{report.run_id}: no bugs found, so there is nothing to fix. The run still stops here: "
                f"{offers}."
            )
        )
    else:
        top = max(bugs, key=lambda bug: bug.token_cost_of_gap)
        agent = sum(bug.fixable_by == "agent" for bug in bugs)
        console.print(
            Text(
                f"{len(bugs)} bug(s); highest token_cost_of_gap {top.token_cost_of_gap:,} tokens ({top.id}). "
                + (
                    f"{agent} of them are agent behaviour (marked `agent`): evidence, not sent to the fix "
                    "loop. "
                    if agent
                    else ""
                )
                + "Fix order:"
            )
        )
        console.print(bug_table(bugs, console.width), soft_wrap=False)
        for owner, priced in inside.items():
            console.print(
                Text(
                    f"  also seen, no cost of its own (priced in {owner}): "
                    + ", ".join(bug.id for bug in priced)
                )
            )
    if report.notes:
        for note in report.notes:
            console.print(Text(f"note: {note}"))
    kpis = read_kpis(run_dir)
    if kpis is not None and kpis.run_id == report.run_id:  # the targets the reviewer decides against
        for line in kpi_lines(kpis):
            console.print(Text(line))
    try:
        narrative = run_dir.phase2_narrative.read_text(encoding="utf-8")
    except FileNotFoundError:
        console.print(Text(f"({run_dir.phase2_narrative.name} is missing: the bug report is all there is.)"))
    else:
        console.print(Markdown(narrative), soft_wrap=False)
    return report, digest


WIDE_TABLE = 120
"""From this console width on, each field of a bug gets its own column; narrower, fields are stacked."""


def bug_table(bugs: list[Bug], width: int = WIDE_TABLE) -> Table:
    """The bugs as a table in the order given (the fix order), one row each.

    Ids are long and must stay readable in one piece, so on a console narrower
    than ``WIDE_TABLE`` the type, severity, tool and trigger are stacked under
    the id instead of being squeezed into columns of their own.
    """
    wide = width >= WIDE_TABLE
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column("#", justify="right")
    longest = max((len(bug.id) for bug in bugs), default=0)
    table.add_column("id / trigger" if wide else "bug", overflow="fold", min_width=min(longest, width - 20))
    if wide:
        for column in ("type", "severity", "tool"):
            table.add_column(column, overflow="fold")
    table.add_column("gap tokens" if wide else "gap", justify="right")
    table.add_column("occurrences" if wide else "seen", justify="right")
    for number, bug in enumerate(bugs, start=1):
        cell = Text(bug.id, style="bold")
        if not wide:
            cell.append(f"\n{bug.type} · {bug.severity} · {bug.tool or 'no tool'} · {bug.fixable_by}")
        cell.append("\n" + bug.trigger, style="dim")
        if bug.fixable_by == "agent":
            cell.append("\nagent behaviour: not sent to the fix loop", style="italic")
        middle = [bug.type, bug.severity, Text(bug.tool or "-")] if wide else []
        table.add_row(str(number), cell, *middle, f"{bug.token_cost_of_gap:,}", str(bug.occurrences))
    return table
