"""What stops the pipeline after lint, and how a person accepts a risk to let it go on.

Blocking findings, each with the rule id an acceptance names:
- a misleading tool (`TEF-M001`, see metrics.py);
- a security finding of severity `error`, the high-confidence ones only: an instruction override
  (TEF-S001), concealment from the user (-S002), hidden characters (-S006), orders about another
  server's tools (-S007), exfiltration (-S008), forbidding or running down another tool (-S009);
  every other security finding is a warning;
- a static finding of severity `error` (TEF-D001: a tool with no description).

`mcpipechekr lint --accept-risk TOOL` accepts every blocking finding of TOOL;
`--accept-risk TOOL:RULE` accepts that rule's findings of TOOL, whatever their
severity. Acceptances are kept per server under `paths.home/lint/` together
with the hash of the tool definition they were given for: when the tool
changes, the acceptance lapses and the finding blocks again, because what was
reviewed is no longer what the agent reads. Accepted findings leave the
report's lists and counts and are listed in its `accepted_risks`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import AwareDatetime, Field
from rich.console import Console

from mcpipechekr.artifacts._base import AcceptedRisk, ArtifactModel, FormatVersion, Sha256, utc_now
from mcpipechekr.artifacts.atomic import read_model, write_model
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.errors import UserError

MISLEADING_RULE = "TEF-M001"
ALL_BLOCKING = "*"
DEFAULT_REASON = "accepted with `mcpipechekr lint --accept-risk`"
_RULE_ID = re.compile(r"^TEF-[A-Z]\d{3}$")


class StoredAcceptance(ArtifactModel):
    """One acceptance, pinned to the definition of the tool it was given for."""

    risk: AcceptedRisk
    definition_hash: Sha256
    accepted_at: AwareDatetime


class AcceptanceStore(ArtifactModel):
    """paths.home/lint/<server>.accepted.json."""

    version: FormatVersion = 1
    server: str = Field(min_length=1)
    acceptances: list[StoredAcceptance] = Field(default_factory=list)


BLOCKS_BECAUSE = {
    "TEF-S001": "it tells the agent to set aside its instructions",
    "TEF-S002": "it tells the agent to hide what it does from its user",
    "TEF-S006": "a person reviewing the tool cannot see this text, and the model reads it",
    "TEF-S007": "it changes what another server's tools do, which no description of this server may",
    "TEF-S008": "it sends what the agent holds somewhere its user did not choose",
    "TEF-S009": "it forbids or runs down another server's tool to steer the agent here",
}
"""Why each blocking security rule blocks, said with every blocking finding."""


def parse_accept_risk(value: str, reason: str | None = None) -> AcceptedRisk:
    """`TOOL` (every blocking finding of the tool) or `TOOL:RULE` (one rule of it)."""
    value = value.strip()
    tool, _, rule = value.rpartition(":")
    if tool and _RULE_ID.match(rule):
        return AcceptedRisk(rule_id=rule, tool=tool, reason=reason or DEFAULT_REASON)
    if not value:
        raise UserError("--accept-risk needs a tool name, e.g. --accept-risk get_email or get_email:TEF-S003")
    return AcceptedRisk(rule_id=ALL_BLOCKING, tool=value, reason=reason or DEFAULT_REASON)


def covers(risk: AcceptedRisk, rule_id: str, tool: str, *, blocking: bool) -> bool:
    """Whether an acceptance covers a finding of `rule_id` on `tool`."""
    if risk.tool is not None and risk.tool != tool:
        return False
    return risk.rule_id == rule_id or (risk.rule_id == ALL_BLOCKING and blocking)


def _covered(risks: Iterable[AcceptedRisk], rule_id: str, tool: str, *, blocking: bool) -> bool:
    return any(covers(risk, rule_id, tool, blocking=blocking) for risk in risks)


def blocking_findings(report: TefReport) -> list[tuple[str, str, str]]:
    """(rule_id, tool, reason) of every finding in the report that blocks the pipeline."""
    found = []
    for tool in report.tools:
        if tool.misleading:
            wrong = sum(c.count for c in tool.confusions if c.picked == tool.name)
            found.append(
                (
                    MISLEADING_RULE,
                    tool.name,
                    f"tool '{tool.name}' is misleading: picked {wrong} time(s) "
                    "with high confidence for queries meant for other tools",
                )
            )
        for finding in tool.findings:
            if finding.severity == "error":
                found.append(
                    (finding.rule_id, tool.name, f"tool '{tool.name}': {finding.rule_id} {finding.message}")
                )
    for finding in report.security:
        if finding.severity == "error":
            span = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in finding.span)
            why = BLOCKS_BECAUSE.get(finding.rule_id, "it is a high-confidence attack on the agent")
            found.append(
                (
                    finding.rule_id,
                    finding.tool,
                    f"tool '{finding.tool}': {finding.rule_id} {finding.message} "
                    f'({finding.location} [{finding.start}:{finding.end}] "{span}"); blocks because {why}',
                )
            )
    return found


def lint_gate(report: TefReport, accepted_risks: Iterable[AcceptedRisk] = ()) -> list[str]:
    """The reasons the pipeline must stop before Phase 1; empty when it may go on.

    Acceptances already recorded in the report count, as do `accepted_risks`.
    """
    risks = [*report.accepted_risks, *accepted_risks]
    return [
        reason
        for rule_id, tool, reason in blocking_findings(report)
        if not _covered(risks, rule_id, tool, blocking=True)
    ]


def apply_accepted_risks(report: TefReport, risks: Sequence[AcceptedRisk]) -> TefReport:
    """A copy without the findings the acceptances cover, listing the acceptances that covered something."""
    used: list[AcceptedRisk] = []

    def keep(rule_id: str, tool: str, blocking: bool) -> bool:
        hits = [risk for risk in risks if covers(risk, rule_id, tool, blocking=blocking)]
        used.extend(risk for risk in hits if risk not in used)
        return not hits

    tools = []
    for tool in report.tools:
        findings = [f for f in tool.findings if keep(f.rule_id, tool.name, f.severity == "error")]
        misleading = tool.misleading and keep(MISLEADING_RULE, tool.name, True)
        tools.append(tool.model_copy(update={"findings": findings, "misleading": misleading}))
    security = [f for f in report.security if keep(f.rule_id, f.tool, f.severity == "error")]
    data = report.model_dump(exclude={"summary"})
    data.update(
        tools=[t.model_dump() for t in tools],
        security=[f.model_dump() for f in security],
        accepted_risks=[r.model_dump() for r in [*report.accepted_risks, *used]],
    )
    return TefReport.model_validate(data)


def store_path(home: Path, server: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", server) or "server"
    return Path(home) / "lint" / f"{safe}.accepted.json"


def load_acceptances(home: Path, server: str) -> AcceptanceStore:
    path = store_path(home, server)
    if not path.exists():
        return AcceptanceStore(server=server)
    return read_model(path, AcceptanceStore)


def record_acceptances(
    home: Path, server: str, new: Sequence[AcceptedRisk], tools: Sequence[ToolDefinition]
) -> list[AcceptedRisk]:
    """Store `new` acceptances (pinned to the tools' current hashes); return every one still valid.

    An acceptance naming a tool the server does not list is an error: a typo must not pass silently.
    """
    hashes = {tool.name: tool.definition_hash for tool in tools}
    unknown = sorted({risk.tool for risk in new if risk.tool is not None and risk.tool not in hashes})
    if unknown:
        raise UserError(
            f"--accept-risk names tool(s) the server does not list: {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(hashes))})"
        )
    store = load_acceptances(home, server)
    kept = [
        a for a in store.acceptances if a.risk.tool in hashes and hashes[a.risk.tool] == a.definition_hash
    ]
    pinned = [risk for risk in new if risk.tool is not None]
    for risk in pinned:
        kept = [a for a in kept if (a.risk.rule_id, a.risk.tool) != (risk.rule_id, risk.tool)]
        kept.append(StoredAcceptance(risk=risk, definition_hash=hashes[risk.tool], accepted_at=utc_now()))
    if pinned or len(kept) != len(store.acceptances):
        write_model(store_path(home, server), AcceptanceStore(server=server, acceptances=kept))
    # An acceptance for every tool is not pinned to one definition, so it holds for this lint only.
    return [a.risk for a in kept] + [risk for risk in new if risk.tool is None]


def confirm_lint_risks(
    report: TefReport, console: Console, accepted_risks: Iterable[AcceptedRisk] = ()
) -> bool:
    """Show what blocks the pipeline and go on only if the person types `accept`.

    True when nothing blocks. There is deliberately no --yes for this: accepting
    a poisoned or misleading tool is a decision someone has to make by typing
    it. End of input (no terminal) counts as a refusal.
    """
    reasons = lint_gate(report, accepted_risks)
    if not reasons:
        return True
    console.print(
        "Lint found risks that must be accepted before agents run against this server:", markup=False
    )
    for reason in reasons:
        console.print(f"  - {reason}", markup=False)
    try:
        answer = console.input('Type "accept" to continue anyway, anything else to stop: ')
    except EOFError:
        return False
    return answer.strip().lower() == "accept"
