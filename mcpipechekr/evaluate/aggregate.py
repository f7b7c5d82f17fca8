"""Many findings in many traces -> one bug per defect, most costly first.

The same defect seen in several traces (tasks, repetitions, models) is one
entry: its id is the finding's stable id (prefix + slug of trigger and tool),
`occurrences` counts the traces showing it, and its token costs are the mean
per occurrence, rounded. The text (trigger, observed, expected, details) is
that of the first occurrence in trace-file order, so it is the same on every
evaluation of the same run. Entries are sorted by `token_cost_of_gap`, highest
first, then by id.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpipechekr.artifacts.bug_report import Bug, Evidence
from mcpipechekr.evaluate.base import Finding, TraceContext
from mcpipechekr.evaluate.costing import Cost

_SEVERITY = {"low": 0, "medium": 1, "high": 2}


@dataclass
class Occurrence:
    finding: Finding
    ctx: TraceContext
    cost: Cost


def drop_explained(findings: list[Finding], excess: int) -> list[Finding]:
    """Drop the summary findings of a trace that the specific ones already explain.

    A call-count finding goes when the other findings' wasted calls cover the excess; a late-tool
    finding (wrong_tool) goes when every call it blames is already another finding's waste: the
    same waste must not be counted twice.
    """
    specific = [finding for finding in findings if finding.analyzer not in ("call_count", "wrong_tool")]
    wasted = {step for finding in specific for step in finding.wasted}
    kept = []
    for finding in findings:
        if finding.analyzer == "call_count" and len(wasted) >= excess:
            continue
        if finding.analyzer == "wrong_tool" and finding.wasted and set(finding.wasted) <= wasted:
            continue
        kept.append(finding)
    return kept


def merge(occurrences: list[Occurrence]) -> list[Bug]:
    """One Bug per finding id, in the order described in the module docstring."""
    groups: dict[str, list[Occurrence]] = {}
    for occurrence in occurrences:
        groups.setdefault(occurrence.finding.id, []).append(occurrence)
    bugs = []
    for bug_id, group in groups.items():
        first = group[0].finding
        count = len(group)
        task_ids = sorted({occ.ctx.trace.task_id for occ in group})
        observed = round(sum(occ.cost.observed for occ in group) / count)
        optimal = round(sum(occ.cost.optimal for occ in group) / count)
        bugs.append(
            Bug(
                id=bug_id,
                type=first.type,
                severity=max((occ.finding.severity for occ in group), key=_SEVERITY.__getitem__),
                source="analyzer",
                tool=first.tool,
                task_id=group[0].ctx.trace.task_id,
                trigger=first.trigger,
                observed=first.observed,
                expected=first.expected,
                acceptance_criteria=first.acceptance_criteria,
                token_cost_observed=observed,
                token_cost_optimal=min(optimal, observed),
                token_cost_of_gap=max(0, observed - optimal),
                occurrences=count,
                task_ids=task_ids,
                evidence=[
                    Evidence(
                        task_id=occ.ctx.trace.task_id,
                        trace=occ.ctx.trace_ref,
                        steps=sorted(occ.finding.steps),
                    )
                    for occ in group
                ],
                details=first.details,
            )
        )
    return sort_bugs(bugs)


def sort_bugs(bugs: list[Bug]) -> list[Bug]:
    """Most costly first; ties by id, so the order never depends on how the bugs were found."""
    return sorted(bugs, key=lambda bug: (-bug.token_cost_of_gap, bug.id))
