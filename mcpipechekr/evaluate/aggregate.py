"""Many sightings in many traces -> one bug per defect, most costly first.

The same defect seen in several traces (tasks, repetitions, models) is one
entry: its id is the sighting's stable id (prefix + slug of trigger and tool),
`occurrences` counts the traces showing it, and its token costs are the mean
per occurrence, rounded. The text (trigger, observed, expected, details) is
that of the first occurrence in trace-file order, so it is the same on every
evaluation of the same run. Entries are sorted by `token_cost_of_gap`, highest
first, then by id; `priority_order` is the one order in which they are fixed
and listed as priorities.

Within a trace, each wasted step is priced by one sighting only
(`assign_steps`): the others that saw it name that sighting in `see_also`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpipechekr.artifacts.bug_report import Bug, Evidence
from mcpipechekr.evaluate.base import BugSighting, TraceContext
from mcpipechekr.evaluate.costing import Cost, price

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


STEP_OWNERS: tuple[str, ...] = (
    "error_workaround",
    "date_windows",
    "pagination",
    "wrong_tool",
    "repeated_calls",
    "unread_fields",
    "oversized",
)
"""Which sighting prices a step two of them claim, within one kind of claim (whole calls, or results):
`server` ones before `agent` ones (the waste goes where it can be fixed), then the most specific cause
first, in this order. A sighting not listed (a new analyzer) comes after these, in the order found."""

SUMMARIES: tuple[str, ...] = ("call_count", "correctness")
"""Sightings that price a whole trace against its known optimum: they keep only what the others leave
unexplained, in this order."""


def assign_steps(sightings: list[BugSighting], ctx: TraceContext) -> list[BugSighting]:
    """Price each wasted step of one trace in one sighting; the others name it in `see_also`.

    Three kinds of claim, settled in this order:

    1. Whole wasted calls (`wasted`): in `STEP_OWNERS` order, a sighting keeps the calls no earlier
       one claimed; a call it loses leaves its `wasted` (its optimum, when the analyzer set one,
       grows by the call's cost).
    2. Results priced by the analyzer itself (`observed_tokens`: an oversized or partly unread
       result): a call already wasted whole is not priced again for its fields, and of two such
       sightings on one call the earlier in `STEP_OWNERS` keeps it; the loser keeps the share of
       its price its remaining calls' tokens carry.
    3. Summaries (`SUMMARIES`: too many calls, a wrong answer), which price the whole trace against
       its optimum: each keeps only the gap the sightings before it, on the same calls, leave
       unexplained (`explained_tokens`).

    A sighting left with nothing to price stays in the report at no cost, as evidence pointing to
    the owner. The list comes back in its order.
    """
    rank = {name: position for position, name in enumerate(STEP_OWNERS)}
    order = sorted(
        range(len(sightings)),
        key=lambda n: (
            sightings[n].fixable_by != "server",
            rank.get(sightings[n].analyzer, len(STEP_OWNERS)),
            n,
        ),
    )
    tokens = ctx.call_tokens
    summaries = [sightings[n] for n in order if sightings[n].analyzer in SUMMARIES]
    summaries.sort(key=lambda sighting: SUMMARIES.index(sighting.analyzer))
    rest = [sightings[n] for n in order if sightings[n].analyzer not in SUMMARIES]
    owner: dict[int, str] = {}
    for sighting in (s for s in rest if s.wasted):
        lost = [step for step in sighting.wasted if step in owner]
        if lost:
            _refer(sighting, [owner[step] for step in lost])
            lost_cost = sum(tokens.get(step, 0) for step in lost)
            sighting.wasted = [step for step in sighting.wasted if step not in set(lost)]
            if sighting.optimal_tokens is not None:
                sighting.optimal_tokens += lost_cost
            if not sighting.wasted:
                sighting.optimal_tokens = None  # priced at no gap: its steps are another's waste
        for step in sighting.wasted:
            owner[step] = sighting.id
    for sighting in (s for s in rest if not s.wasted and s.observed_tokens is not None):
        claimed = sorted(set(sighting.steps))
        lost = [step for step in claimed if step in owner]
        if lost:
            _refer(sighting, [owner[step] for step in lost])
            total = sum(tokens.get(step, 0) for step in claimed)
            share = 1 - sum(tokens.get(step, 0) for step in lost) / total if total else 0.0
            sighting.observed_tokens = round(sighting.observed_tokens * share)
            if sighting.optimal_tokens is not None:
                sighting.optimal_tokens = round(sighting.optimal_tokens * share)
        for step in claimed:
            owner.setdefault(step, sighting.id)
    done = list(rest)
    for summary in summaries:
        covered = set(summary.priced_steps if summary.priced_steps is not None else summary.steps)
        explaining = [
            (other, price(other, ctx).gap) for other in done if covered & {*other.steps, *other.wasted}
        ]
        explaining = [(other, gap) for other, gap in explaining if gap > 0]
        if explaining:
            _refer(summary, [other.id for other, _ in explaining])
            summary.explained_tokens = sum(gap for _, gap in explaining)
        done.append(summary)
    return sightings


def _refer(sighting: BugSighting, owners: list[str]) -> None:
    sighting.see_also = sorted({*sighting.see_also, *owners} - {sighting.id})


def priority_order(bugs: list[Bug]) -> list[Bug]:
    """The one order bugs are fixed in and listed as priorities: what the server can fix first, then
    the most severe, then the highest `token_cost_of_gap`, ties by id. The review shows it, the fix
    loop follows it (its `server` part), the narrative numbers its priorities by it."""
    return sorted(
        bugs,
        key=lambda bug: (
            bug.fixable_by != "server",
            -_SEVERITY[bug.severity],
            -bug.token_cost_of_gap,
            bug.id,
        ),
    )


def folded(bugs: list[Bug]) -> tuple[list[Bug], dict[str, list[Bug]]]:
    """The bugs to rank, in the order given, and per bug the ones priced in it.

    A bug with no gap of its own whose steps another listed bug prices (`see_also`) is evidence for
    that bug, not a second item to weigh: ranked lists (the review's, the narrative's priorities,
    the HTML report's table) show it under its owner. It stays in bug_report.json.
    """
    ids = {bug.id for bug in bugs}
    inside: dict[str, list[Bug]] = {}
    ranked = []
    for bug in bugs:
        owner = next((other for other in bug.see_also if other in ids), None)
        if bug.token_cost_of_gap == 0 and owner is not None:
            inside.setdefault(owner, []).append(bug)
        else:
            ranked.append(bug)
    return ranked, inside


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
                        tool=occ.sighting.tool if occ.sighting.tool != first.tool else None,
                        expected_tool=occ.sighting.expected_tool,
                    )
                    for occ in group
                ],
                details=_merged_details(group),
                fixable_by=first.fixable_by,
                expected_tool=first.expected_tool,
                see_also=sorted({other for occ in group for other in occ.sighting.see_also} - {bug_id}),
            )
        )
    return sort_bugs(bugs)


def _merged_details(group: list[Occurrence]) -> dict:
    """The first sighting's details, with every list of names (`tools_used`, …) the union of the
    group's: merged tasks keep what each of them saw."""
    details = dict(group[0].sighting.details)
    for key, value in details.items():
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            union = {
                item for occ in group for item in occ.sighting.details.get(key, []) if isinstance(item, str)
            }
            details[key] = sorted(union)
    return details


def sort_bugs(bugs: list[Bug]) -> list[Bug]:
    """Most costly first; ties by id, so the order never depends on how the bugs were found."""
    return sorted(bugs, key=lambda bug: (-bug.token_cost_of_gap, bug.id))
