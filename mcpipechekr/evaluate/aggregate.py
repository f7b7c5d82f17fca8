"""Many sightings in many traces -> one bug per defect, most costly first.

The same defect seen in several traces (tasks, repetitions, models) is one
entry: its id is the sighting's stable id (prefix + slug of trigger and tool),
`occurrences` counts the traces showing it, and its token costs are the mean
per occurrence, rounded. The text (trigger, observed, expected, details) is
that of the first occurrence in trace-file order, so it is the same on every
evaluation of the same run. Entries are sorted by `token_cost_of_gap`, highest
first, then by id.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpipechekr.artifacts.bug_report import Bug, Evidence
from mcpipechekr.evaluate.base import BugSighting, TraceContext
from mcpipechekr.evaluate.costing import Cost

_SEVERITY = {"low": 0, "medium": 1, "high": 2}


@dataclass
class Occurrence:
    sighting: BugSighting
    ctx: TraceContext
    cost: Cost


def drop_explained(sightings: list[BugSighting], excess: int) -> list[BugSighting]:
    """Drop the summary sightings of a trace that the specific ones already explain.

    A call-count sighting goes when the other sightings' wasted calls cover the excess; a late-tool
    sighting (wrong_tool) goes when every call it blames is already another sighting's waste: the
    same waste must not be counted twice.
    """
    specific = [sighting for sighting in sightings if sighting.analyzer not in ("call_count", "wrong_tool")]
    wasted = {step for sighting in specific for step in sighting.wasted}
    kept = []
    for sighting in sightings:
        if sighting.analyzer == "call_count" and len(wasted) >= excess:
            continue
        if sighting.analyzer == "wrong_tool" and sighting.wasted and set(sighting.wasted) <= wasted:
            continue
        kept.append(sighting)
    return kept


def merge(occurrences: list[Occurrence]) -> list[Bug]:
    """One Bug per sighting id, in the order described in the module docstring."""
    groups: dict[str, list[Occurrence]] = {}
    for occurrence in occurrences:
        groups.setdefault(occurrence.sighting.id, []).append(occurrence)
    bugs = []
    for bug_id, group in groups.items():
        first = group[0].sighting
        count = len(group)
        task_ids = sorted({occ.ctx.trace.task_id for occ in group})
        observed = round(sum(occ.cost.observed for occ in group) / count)
        optimal = round(sum(occ.cost.optimal for occ in group) / count)
        bugs.append(
            Bug(
                id=bug_id,
                type=first.type,
                severity=max((occ.sighting.severity for occ in group), key=_SEVERITY.__getitem__),
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
                        steps=sorted(occ.sighting.steps),
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
