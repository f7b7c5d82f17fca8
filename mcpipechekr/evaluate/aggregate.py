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
from mcpipechekr.evaluate.costing import Cost

_SEVERITY = {"low": 0, "medium": 1, "high": 2}

STEP_OWNERS: tuple[str, ...] = (
    "error_workaround",
    "date_windows",
    "pagination",
    "unread_fields",
    "oversized",
    "wrong_tool",
    "repeated_calls",
    "call_count",
    "correctness",
)
"""Which sighting prices a step two of them claim: `server` ones before `agent` ones (the waste goes
where it can be fixed), then the most specific cause first, in this order. A sighting not listed
(a new analyzer) comes after these, in the order it was found."""


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


def _claimed(sighting: BugSighting) -> list[int]:
    """The steps a sighting prices: its wasted calls, or, when it prices its steps' results itself
    (an oversized or partly unread result, a wrong answer), those steps (`priced_steps` when set)."""
    if sighting.priced_steps is not None:
        return sorted(set(sighting.priced_steps))
    if sighting.wasted:
        return sorted(set(sighting.wasted))
    return sorted(set(sighting.steps)) if sighting.observed_tokens is not None else []


def assign_steps(sightings: list[BugSighting], ctx: TraceContext) -> list[BugSighting]:
    """Give each claimed step of one trace to one sighting; the others reference it and stop pricing it.

    In `STEP_OWNERS` order, a sighting keeps the steps no earlier one claimed. For the steps it
    loses, it names their owners in `see_also` and its price shrinks: a sighting priced by its
    wasted calls drops them from `wasted` (its optimum, when the analyzer set one, grows by their
    cost, and `extra_calls` by their number); one that priced its steps itself keeps the share of
    its price that its remaining steps' tokens carry. A sighting left with nothing to price stays
    in the report, at no cost, as evidence pointing to the owner. The list comes back in its order.
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
    owner: dict[int, str] = {}
    tokens = ctx.call_tokens
    for n in order:
        sighting = sightings[n]
        claimed = _claimed(sighting)
        lost = [step for step in claimed if step in owner and owner[step] != sighting.id]
        if lost:
            sighting.see_also = sorted({*sighting.see_also, *(owner[step] for step in lost)})
            _give_up(sighting, claimed, lost, tokens)
        for step in claimed:
            owner.setdefault(step, sighting.id)
    return sightings


def _give_up(sighting: BugSighting, claimed: list[int], lost: list[int], tokens: dict[int, int]) -> None:
    """Stop pricing `lost` (steps another sighting prices) in `sighting`; see `assign_steps`."""
    lost_cost = sum(tokens.get(step, 0) for step in lost)
    if sighting.wasted and sighting.priced_steps is None:
        sighting.wasted = [step for step in sighting.wasted if step not in set(lost)]
        if sighting.optimal_tokens is not None:
            sighting.optimal_tokens += lost_cost
        if sighting.extra_calls is not None:
            sighting.extra_calls = max(0, min(sighting.extra_calls - len(lost), len(sighting.wasted)))
        if not sighting.wasted or sighting.extra_calls == 0:
            sighting.wasted, sighting.optimal_tokens, sighting.observed_tokens = [], None, None
        return
    total = sum(tokens.get(step, 0) for step in claimed)
    share = (total - lost_cost) / total if total else 0.0
    if sighting.observed_tokens is not None:
        sighting.observed_tokens = round(sighting.observed_tokens * share)
    if sighting.optimal_tokens is not None:
        sighting.optimal_tokens = round(sighting.optimal_tokens * share)


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
                fixable_by=first.fixable_by,
                expected_tool=first.expected_tool,
                see_also=sorted({other for occ in group for other in occ.sighting.see_also} - {bug_id}),
            )
        )
    return sort_bugs(bugs)


def sort_bugs(bugs: list[Bug]) -> list[Bug]:
    """Most costly first; ties by id, so the order never depends on how the bugs were found."""
    return sorted(bugs, key=lambda bug: (-bug.token_cost_of_gap, bug.id))
