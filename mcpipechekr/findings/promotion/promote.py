"""`promote`: recurring groups of captured failures become findings.

A candidate issue (see `groups`) becomes a finding when its score (see
`scoring`) meets the threshold AND it was seen in at least two distinct
sessions. The session rule holds at any threshold, 0 included: one session
that hits the same error ten times is one bad run, not a recurring defect.

Promotion only ever adds to lifecycle.db. A finding already registered keeps
its row and state; while its group is still in the index its metrics are
refreshed, whether or not the group still qualifies. Before grouping, every
annotation is resolved again against the current index (see `annotate`), so
an annotation made before its call was indexed takes effect on the next
`promote` after `index`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.findings.classes import HINTS, classify, severity_for
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import lifecycle_connection, load_findings, upsert_finding
from mcpipechekr.findings.promotion.annotate import (
    AnnotationStatus,
    IndexedCall,
    indexed_calls,
    list_annotations,
    resolve,
    store_resolution,
)
from mcpipechekr.findings.promotion.groups import Group, GroupKey, collect_groups
from mcpipechekr.findings.promotion.scoring import score, wilson_low
from mcpipechekr.findings.promotion.settings import promotion_threshold

MIN_SESSIONS = 2


@dataclass
class ScoredGroup:
    group: Group
    score: float
    promoted: bool


@dataclass
class PromoteResult:
    """What one `promote` did, for the summary line and for tests."""

    threshold: float
    issues: int = 0
    promoted: list[Finding] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    single_session: int = 0
    below_threshold: int = 0
    annotations: dict[AnnotationStatus, int] = field(default_factory=dict)

    def summary(self) -> str:
        """`promoted F of I issues`, then why the others were not."""
        line = f"promoted {len(self.promoted)} of {self.issues} issues"
        details = [
            f"{len(self.new)} new",
            f"{self.single_session} seen in one session only",
            f"{self.below_threshold} scored below the threshold {self.threshold:g}",
        ]
        return f"{line} ({', '.join(details)})"


@contextlib.contextmanager
def opened_index(home: Home) -> Iterator[sqlite3.Connection]:
    """The index read-only; `EvidenceUnavailable` (exit 3) when it is missing, corrupt or incomplete."""
    from mcpipechekr.findings.evidence.index_db import open_index

    conn = open_index(home)
    try:
        yield conn
    finally:
        conn.close()


def require_index(home: Home) -> None:
    """`EvidenceUnavailable` (exit 3) unless the index is usable.

    The findings live in lifecycle.db; the index must still be there to vouch
    for them, so every view of the findings checks it first.
    """
    with opened_index(home):
        pass


def registered_findings(home: Home, states: Collection[str] = ()) -> list[Finding]:
    """The registered findings, only those in `states` when any are given; `require_index` first."""
    require_index(home)
    return [finding for finding in load_findings(home) if not states or finding.state in states]


def score_groups(groups: list[Group], *, threshold: float, now: datetime) -> list[ScoredGroup]:
    """Score every group and apply the promotion rule (threshold and two sessions)."""
    scored = []
    for group in groups:
        value = score(
            failures=group.failures,
            calls=group.calls,
            last_seen=group.last_seen,
            now=now,
            turns=group.turns,
            blast_radius=group.blast_radius,
        )
        scored.append(ScoredGroup(group, value, value >= threshold and group.sessions >= MIN_SESSIONS))
    return scored


def finding_of(scored: ScoredGroup) -> Finding:
    """The finding a scored group stands for."""
    group = scored.group
    key = group.key
    defect = classify(group.err_codes, false_success=key.kind == "false_success")
    return Finding(
        id=key.finding_id,
        origin="captured",
        server=key.server,
        tool=key.tool,
        template_id=key.template_id,
        defect_class=defect,
        hint=HINTS[defect],
        severity=severity_for(
            defect, rate_low=wilson_low(group.failures, group.calls), blast_radius=group.blast_radius
        ),
        probe=True,
        err_code=group.most_frequent_code,
        err_codes=sorted(group.err_codes),
        rate=round(group.rate, 6),
        score=scored.score,
        occurrences=group.failures,
        sessions=group.sessions,
        blast_radius=group.blast_radius,
        retryable=group.retryable if key.kind == "error" else None,
        arg_shapes=group.top_shapes(),
        first_seen=group.first_seen,
        last_seen=group.last_seen,
    )


def promote(home: Home, *, threshold: float | None = None, now: datetime | None = None) -> PromoteResult:
    """Resolve annotations, group and score the index, register the findings; see the module docstring.

    ``threshold`` overrides config.json; ``now`` is the time recency is measured
    against (default: the current time).
    """
    limit = promotion_threshold(home, threshold)
    as_of = now or utc_now()
    result = PromoteResult(threshold=limit)
    with opened_index(home) as index, lifecycle_connection(home) as life:
        annotations = list_annotations(life)
        calls = indexed_calls(index, (annotation.event_id for annotation in annotations))
        resolution = resolve(annotations, calls)
        linked = {
            annotation.id: (annotation.kind, call)
            for annotation in annotations
            for status, call in [resolution[annotation.id]]
            if status == "linked" and call is not None
        }
        groups = collect_groups(
            index,
            expected=[call.event_id for kind, call in linked.values() if kind == "expected"],
            false_success=[call.event_id for kind, call in linked.values() if kind == "false-success"],
        )
        scored = score_groups(groups, threshold=limit, now=as_of)
        registered = {row[0] for row in life.execute("SELECT id FROM findings")}
        result.issues = len(scored)
        with life:
            for item in scored:
                finding = finding_of(item)
                if item.promoted:
                    result.promoted.append(finding)
                elif item.group.sessions < MIN_SESSIONS:
                    result.single_session += 1
                else:
                    result.below_threshold += 1
                if item.promoted or finding.id in registered:
                    if upsert_finding(life, finding, now=as_of):
                        result.new.append(finding.id)
            store_resolution(life, _annotation_targets(resolution, linked))
    for status, _ in resolution.values():
        result.annotations[status] = result.annotations.get(status, 0) + 1
    return result


def _annotation_targets(
    resolution: dict[int, tuple[AnnotationStatus, IndexedCall | None]],
    linked: dict[int, tuple[str, IndexedCall]],
) -> dict[int, tuple[AnnotationStatus, str | None]]:
    """Each annotation's status and, when linked, the finding id of the group it feeds."""
    targets: dict[int, tuple[AnnotationStatus, str | None]] = {}
    for annotation_id, (status, _) in resolution.items():
        finding_id = None
        if annotation_id in linked:
            kind, call = linked[annotation_id]
            if kind == "false-success":
                finding_id = GroupKey("false_success", call.server, call.tool).finding_id
            else:
                finding_id = GroupKey("error", call.server, call.tool, call.template_id).finding_id
        targets[annotation_id] = (status, finding_id)
    return targets
