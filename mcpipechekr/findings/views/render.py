"""The findings as text for a coding agent, markdown for people, or JSON for tools.

Everything shown comes from the `Finding` model, which holds identifiers
(finding id, salted template id, bug id), aggregates, the class and its hint,
and argument shapes. Error texts, notes, session tokens, the salt and argument
values are not in the model, so no format can leak them. JSON is the whole
model (with `retryable`: true when every failure was retryable, false when
none was, null when mixed or unreported); the agent and markdown formats pick
what helps to fix.

Order: open findings first, then fix-claimed, verifying, closed; within a
state by severity, score, then id, so the same store always renders the same.
"""

from __future__ import annotations

from typing import Literal

from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.artifacts.findings import Finding, FindingsList, shape_text
from mcpipechekr.findings.classes import SEVERITY_ORDER

OutputFormat = Literal["agent", "md", "json"]
STATE_ORDER = ("open", "fix-claimed", "verifying", "closed")


def ordered(findings: list[Finding]) -> list[Finding]:
    """The display order described in the module docstring."""
    return sorted(
        findings,
        key=lambda f: (STATE_ORDER.index(f.state), -SEVERITY_ORDER.index(f.severity), -f.score, f.id),
    )


def render(findings: list[Finding], output_format: OutputFormat) -> str:
    """The findings in one format; the caller decides what an empty list means."""
    items = ordered(findings)
    if output_format == "json":
        return dumps_json(FindingsList(findings=items).model_dump(mode="json")).decode()
    if output_format == "md":
        return render_markdown(items)
    return render_agent(items)


def _where(finding: Finding) -> str:
    return f"{finding.server}/{finding.tool}" if finding.tool else finding.server


def _codes(finding: Finding) -> str:
    if not finding.err_codes:
        return "none reported"
    others = [code for code in finding.err_codes if code != finding.err_code]
    return ", ".join([f"{finding.err_code} (most frequent)", *others])


def _evidence(finding: Finding) -> str:
    if finding.origin == "bug_report":
        return (
            f"bug {finding.bug_id}: seen {finding.occurrences} time(s) in {finding.sessions} trace(s), "
            f"rate {finding.rate:.2f}"
        )
    return (
        f"{finding.occurrences} failing call(s), rate {finding.rate:.2f}, {finding.sessions} session(s), "
        f"blast radius {finding.blast_radius} tool(s), score {finding.score:.3f}"
    )


def render_agent(findings: list[Finding]) -> str:
    """Compact plain text, one block per finding: what is wrong, where, how often, what to change."""
    blocks = []
    for finding in findings:
        lines = [
            f"{finding.id} [{finding.state}] {finding.severity} {finding.defect_class} at {_where(finding)}",
            f"  evidence: {_evidence(finding)}",
        ]
        if finding.origin == "captured":
            lines.append(f"  error: template {finding.template_id or 'none'}; codes {_codes(finding)}")
        for shape in finding.arg_shapes:
            lines.append(f"  arguments: {shape_text(shape)}")
        lines.append(f"  fix: {finding.hint}")
        if finding.state != "open":
            lines.append(f"  verification streak: {finding.streak}")
        if not finding.probe:
            lines.append("  no probe: a fix is checked and closed by hand")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(findings: list[Finding]) -> str:
    """A summary table, then one section per finding."""
    out = [
        "# Findings",
        "",
        "| Finding | State | Severity | Class | Where | Rate | Sessions | Score |",
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for f in findings:
        out.append(
            f"| `{f.id}` | {f.state} | {f.severity} | {f.defect_class} | {_cell(_where(f))} "
            f"| {f.rate:.2f} | {f.sessions} | {f.score:.3f} |"
        )
    for f in findings:
        out += ["", f"## `{f.id}`: {f.defect_class} at `{_cell(_where(f))}`", ""]
        out.append(f"- State: {f.state}" + (f" (streak {f.streak})" if f.state != "open" else ""))
        no_probe = "" if f.probe else " (no probe: at most medium, closed by hand)"
        out.append(f"- Severity: {f.severity}{no_probe}")
        out.append(f"- Evidence: {_evidence(f)}")
        if f.origin == "captured":
            out.append(f"- Error template: `{f.template_id or 'none'}`; codes: {_cell(_codes(f))}")
        if f.first_seen and f.last_seen:
            out.append(f"- Seen: {f.first_seen.date().isoformat()} to {f.last_seen.date().isoformat()}")
        for shape in f.arg_shapes:
            out.append(f"- Arguments: `{_cell(shape_text(shape))}`")
        out += ["", f"Fix: {f.hint}"]
    return "\n".join(out) + "\n"
