"""Phase 2 bug-report entries as findings, so efficiency and correctness bugs share the lifecycle.

`register_bug_report` is what the loop calls after Phase 2. Each bug becomes
(or refreshes) the finding `finding-` + the first 16 hex digits of a sha256
of the bug id and the server it was seen on (`server_identity.ServerKey`);
bug ids are stable across runs, so the same problem seen in several runs of
one server is one finding, and the same bug id on two servers sharing a home
is two. The server is recorded as the finding's owner (`lifecycle/trust.py`):
only its runs verify it.

Only sanitized facts are kept: the bug's type and severity, its tool, counts,
and the *shape* of the failing arguments. The bug's own texts (trigger,
observed, expected, error text) may hold argument values and stay in
bug_report.json; the finding's hint comes from its class.

Each run is a sighting, stored per run id: registering a report twice changes
nothing, and the finding's metrics are the sums over distinct runs
(occurrences, sessions = traces showing it, runs of the tasks it was seen in).
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

import orjson

from mcpipechekr.artifacts.bug_report import Bug, BugReport
from mcpipechekr.artifacts.findings import DefectClass, Finding
from mcpipechekr.findings.classes import HINTS, cap_without_probe, class_of_code, code_for_message
from mcpipechekr.findings.evidence.records import arg_shape
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import lifecycle_connection, upsert_finding
from mcpipechekr.findings.lifecycle.trust import claim_owner_on
from mcpipechekr.findings.promotion.scoring import wilson_low
from mcpipechekr.findings.server_identity import ServerKey

TYPE_CLASSES: dict[str, DefectClass] = {
    "efficiency": "efficiency",
    "correctness": "correctness",
    "feature_gap": "feature_gap",
    "description": "other",
    "bug": "other",
}
DESCRIPTION_HINT = (
    "Say in the tool's description and input schema which values it accepts and what it returns."
)


def bug_finding_id(bug_id: str, server: ServerKey) -> str:
    """`finding-` + 16 hex of sha256 of the server's name and source and the bug id."""
    text = f"bug:{server.name}\0{server.source}\0{bug_id}"
    return "finding-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def register_bug_report(home: Home, bug_report: BugReport, *, server: ServerKey) -> list[Finding]:
    """Register every bug of a Phase 2 report as a finding of `server` (state untouched); returns them.

    Safe to call again with the same report: a run is counted once.
    """
    findings = []
    with lifecycle_connection(home) as conn, conn:
        for bug in bug_report.bugs:
            finding_id = bug_finding_id(bug.id, server)
            sightings = _read_sightings(conn, finding_id)
            sightings[bug_report.run_id] = _sighting(bug, bug_report)
            finding = _finding(finding_id, bug, server.name, sightings)
            upsert_finding(conn, finding, now=bug_report.evaluated_at)
            claim_owner_on(conn, finding_id, server)
            conn.execute(
                "UPDATE findings SET sightings = ? WHERE id = ?",
                (orjson.dumps(sightings, option=orjson.OPT_SORT_KEYS).decode(), finding_id),
            )
            findings.append(finding)
    return findings


def _read_sightings(conn: sqlite3.Connection, finding_id: str) -> dict[str, dict[str, Any]]:
    row = conn.execute("SELECT sightings FROM findings WHERE id = ?", (finding_id,)).fetchone()
    return orjson.loads(row[0]) if row else {}


def _sighting(bug: Bug, report: BugReport) -> dict[str, Any]:
    seen_in = set(bug.task_ids) | ({bug.task_id} if bug.task_id else set())
    runs = sum(task.runs for task in report.tasks if task.task_id in seen_in)
    if runs == 0:
        runs = sum(task.runs for task in report.tasks)
    traces = {evidence.trace for evidence in bug.evidence}
    arguments = bug.details.get("arguments")
    return {
        "at": report.evaluated_at.isoformat(),
        "occurrences": bug.occurrences,
        "sessions": max(1, len(traces)),
        "runs": max(runs, bug.occurrences),
        "severity": bug.severity,
        "shape": arg_shape(arguments) if isinstance(arguments, dict) else None,
        "code": _error_code(bug),
    }


def _error_code(bug: Bug) -> str | None:
    """The symbolic code of a `bug` entry's error text, read here and not kept (as capture does)."""
    text = bug.details.get("error_text")
    if bug.type != "bug" or not isinstance(text, str):
        return None
    return code_for_message(text)


def _finding(finding_id: str, bug: Bug, server: str, sightings: dict[str, dict[str, Any]]) -> Finding:
    latest = sightings[max(sightings, key=lambda run: sightings[run]["at"])]
    occurrences = sum(s["occurrences"] for s in sightings.values())
    runs = sum(s["runs"] for s in sightings.values())
    sessions = sum(s["sessions"] for s in sightings.values())
    defect = TYPE_CLASSES[bug.type]
    defect = class_of_code(latest.get("code")) or defect
    shapes = []
    for sighting in sorted(sightings.values(), key=lambda s: s["at"], reverse=True):
        shape = sighting.get("shape")
        if shape and shape not in shapes:
            shapes.append(shape)
    probe = bug.tool is not None
    times = sorted(s["at"] for s in sightings.values())
    return Finding(
        id=finding_id,
        origin="bug_report",
        bug_id=bug.id,
        server=server,
        tool=bug.tool,
        defect_class=defect,
        hint=DESCRIPTION_HINT if bug.type == "description" else HINTS[defect],
        severity=cap_without_probe(latest["severity"], probe),
        probe=probe,
        rate=round(min(1.0, occurrences / runs), 6) if runs else 0.0,
        score=round(wilson_low(occurrences, runs), 6),
        occurrences=occurrences,
        sessions=sessions,
        blast_radius=1 if bug.tool else 0,
        arg_shapes=shapes[:5],
        first_seen=times[0],
        last_seen=times[-1],
    )
