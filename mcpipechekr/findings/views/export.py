"""`mcpipechekr export-issues`: one issue-ready markdown file per finding not yet closed.

Each file is what a maintainer pastes into an issue tracker: the evidence in
aggregates, the severity and class, the shape-level reproduction (which tool,
with which argument keys and types), the fix hint, and the exact `generate`
and `verify` commands that prove a fix. Like every findings view it is built
from the `Finding` model alone, which holds no argument values, error texts,
notes, sessions or salt, so an export is safe to share.

Files are named `<finding id>.md` and rewritten atomically, so exporting
again updates them in place; the file of a finding that has since closed is
removed (only files named like a finding are ever touched).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import CLOSING_STREAK
from mcpipechekr.findings.promotion.promote import registered_findings
from mcpipechekr.findings.verification.generate import case_id_for
from mcpipechekr.findings.views.render import ordered

_EXPORTED_NAME = re.compile(r"^finding-[0-9a-f]{16}\.md$")


@dataclass
class ExportResult:
    """The files an export wrote and the stale ones it removed."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


def export_issues(home: Home, out_dir: Path) -> ExportResult:
    """Write one file per finding that is not closed; EvidenceUnavailable (exit 3) without a usable index."""
    findings = [finding for finding in ordered(registered_findings(home)) if finding.state != "closed"]
    out_dir.mkdir(parents=True, exist_ok=True)
    result = ExportResult()
    current = set()
    for finding in findings:
        path = out_dir / f"{finding.id}.md"
        atomic_write_text(path, issue_markdown(finding))
        result.written.append(path)
        current.add(path.name)
    for stale in sorted(out_dir.iterdir()):
        if _EXPORTED_NAME.match(stale.name) and stale.name not in current and stale.is_file():
            stale.unlink()
            result.removed.append(stale)
    return result


def issue_markdown(finding: Finding) -> str:
    """The issue text of one finding."""
    where = f"`{finding.tool}` on server `{finding.server}`" if finding.tool else f"server `{finding.server}`"
    lines = [
        f"# {finding.severity.capitalize()}: {finding.defect_class.replace('_', ' ')} in {where}",
        "",
        f"- Finding: `{finding.id}`" + (f" (Phase 2 bug `{finding.bug_id}`)" if finding.bug_id else ""),
        f"- State: {finding.state}"
        + (f", {finding.streak} of {CLOSING_STREAK} green verifications" if finding.streak else ""),
        f"- Severity: {finding.severity}" + ("" if finding.probe else " (capped at medium: no probe)"),
        f"- Class: {finding.defect_class}",
        "",
        "## Evidence",
        "",
        *_evidence(finding),
        "",
        "## Reproduce",
        "",
        *_repro(finding),
        "",
        "## Suggested fix",
        "",
        finding.hint,
        "",
        "## Verify the fix",
        "",
        *_verify(finding),
    ]
    return "\n".join(lines) + "\n"


def _evidence(finding: Finding) -> list[str]:
    if finding.origin == "bug_report":
        out = [
            f"- Seen {finding.occurrences} time(s) in {finding.sessions} trace(s), rate {finding.rate:.2f}"
        ]
    else:
        out = [
            f"- {finding.occurrences} failing call(s) in {finding.sessions} session(s), "
            f"failure rate {finding.rate:.2f}, score {finding.score:.3f}",
            f"- Blast radius: {finding.blast_radius} tool(s) fail with the same error template",
        ]
    if finding.err_codes:
        others = [code for code in finding.err_codes if code != finding.err_code]
        out.append(
            f"- Error codes: `{finding.err_code}` (most frequent)" + "".join(f", `{code}`" for code in others)
        )
    if finding.template_id:
        out.append(f"- Error template id: `{finding.template_id}` (salted; the message text is not stored)")
    if finding.retryable is not None:
        out.append(f"- Retryable: {'every' if finding.retryable else 'no'} failure was reported retryable")
    if finding.first_seen and finding.last_seen:
        out.append(f"- Seen from {finding.first_seen.isoformat()} to {finding.last_seen.isoformat()}")
    return out


def _repro(finding: Finding) -> list[str]:
    if finding.tool is None:
        return ["No single tool call reproduces it; see the evidence above."]
    if not finding.arg_shapes:
        return [f"Call `{finding.tool}` (no arguments were recorded on the failing calls)."]
    out = [f"Call `{finding.tool}` with arguments of this shape (values are never recorded):", ""]
    for shape in finding.arg_shapes:
        out += ["```json", json.dumps(shape, sort_keys=True), "```"]
    return out


def _verify(finding: Finding) -> list[str]:
    if not finding.probe:
        return [
            "No automatic probe exists for this finding. Once it is resolved, close it by hand:",
            "",
            "```sh",
            f'mcpipechekr verify --finding {finding.id} --close-manually "what resolved it"',
            "```",
        ]
    if finding.tool is None:
        return ["The loop's next runs verify it: it closes once the bug is absent from three runs in a row."]
    manifest = f"{finding.id}.case.yaml"
    expect = " --expect expect.json" if finding.defect_class == "false_success" else ""
    out = [
        "```sh",
        f"mcpipechekr generate --finding {finding.id} --confirm-read-only{expect} --output {manifest}",
        "# fill the <fill: TYPE> placeholders in the manifest, then accept it and run it against the fixed "
        "server:",
        f"mcpipechekr verify --accept-case --finding {finding.id} --case {case_id_for(finding)} "
        f"--manifest {manifest} -- <server command…>",
        "```",
        "",
        f"{CLOSING_STREAK} consecutive green runs with the same case, server files and harness close it; "
        "a red run reopens it.",
    ]
    if expect:
        out.insert(
            0,
            "A false success answers ok, so expect.json must assert on the result "
            '(e.g. `{"equals_paths": {"/structuredContent/saved": true}}`) or expect an error.',
        )
        out.insert(1, "")
    return out
