"""tef_report.json from the parts, and the readable report printed by `mcpipechekr lint`.

The text report puts what blocks the pipeline first, then the rest from worst to
mildest: security findings, static errors, misleading and imprecise tools,
overlapping pairs, static warnings, drift, and notes last. Selection figures
of the lexical selector are notes, never warnings (word overlap is a rough
signal; the report says how to have a model score selection instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from mcpipechekr.artifacts.atomic import write_model
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.tef_report import (
    Drift,
    Overlap,
    SecurityFinding,
    StaticFinding,
    TefReport,
    ToolEvaluation,
)
from mcpipechekr.config import provider_flag
from mcpipechekr.lint.metrics import ToolScores
from mcpipechekr.lint.risks import lint_gate
from mcpipechekr.lint.selection import LEXICAL


def build_report(
    *,
    server: str,
    tools_hash: str,
    selector: str,
    generated_at: datetime,
    tool_names: Sequence[str],
    findings: Mapping[str, list[StaticFinding]],
    scores: Mapping[str, ToolScores],
    overlaps: list[Overlap],
    security: list[SecurityFinding],
    selection_cases: int,
    repeat: int,
    drift: Drift | None = None,
) -> TefReport:
    """Assemble the report; scores are rounded to 4 places so equal runs write equal files."""
    tools = []
    for name in tool_names:
        score = scores.get(name)
        tools.append(
            ToolEvaluation(
                name=name,
                findings=findings.get(name, []),
                precision=_round(score.precision) if score else None,
                recall=_round(score.recall) if score else None,
                f1=_round(score.f1) if score else None,
                support=score.support if score else 0,
                misleading=score.misleading if score else False,
                confusions=score.confusions if score else [],
            )
        )
    return TefReport(
        generated_at=generated_at,
        server=server,
        tools_hash=tools_hash,
        selector=selector,
        selection_cases=selection_cases,
        repeat=repeat,
        tools=tools,
        overlaps=overlaps,
        security=security,
        drift=drift or Drift(),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def write_tef_report(run_dir: RunDir | Path, report: TefReport) -> Path:
    """Write runs/{run-id}/tef_report.json atomically; `run_dir` is a RunDir or the run's folder."""
    folder = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    return write_model(folder.tef_report, report)


def is_lexical(report: TefReport) -> bool:
    """Whether the selection test ran without a model (its figures are then notes, not warnings)."""
    return report.selector == LEXICAL


def selection_findings(report: TefReport, threshold: float) -> list[tuple[str, str]]:
    """(tool, line) for each tool picked with precision below the threshold, worded for the selector.

    A model's figures are warnings (never failures); the lexical selector's are notes that ask
    nothing of the author, since word overlap is a rough signal of what an agent would pick.
    """
    low = [tool for tool in report.tools if tool.precision is not None and tool.precision < threshold]
    if is_lexical(report):
        return [
            (
                tool.name,
                f"tool '{tool.name}' lexical selection precision {tool.precision:.2f} "
                f"(below {threshold:.2f}; word overlap, not a model: no reason to change the description)",
            )
            for tool in low
        ]
    return [
        (tool.name, f"tool '{tool.name}' selection precision {tool.precision:.2f} is below {threshold:.2f}")
        for tool in low
    ]


def precision_warnings(report: TefReport, threshold: float) -> list[str]:
    """A model's low-precision tools, as warnings; none for the lexical selector (see `selection_notes`)."""
    return [] if is_lexical(report) else [line for _, line in selection_findings(report, threshold)]


def selection_notes(report: TefReport, threshold: float) -> list[str]:
    """The lexical selector's low-precision tools, as notes; none for a model (see `precision_warnings`)."""
    return [line for _, line in selection_findings(report, threshold)] if is_lexical(report) else []


def model_selection_hint() -> str:
    """How to have a model score tool selection instead of the lexical selector: the setting and the flag."""
    flag = provider_flag("phase05").flag
    return (
        f"Selection figures by {LEXICAL} are word overlap, without a model: a rough signal. For a model's "
        f"judgement, set `providers: {{phase05: PROVIDER/MODEL}}` in config.yaml (e.g. openai/gpt-4o-mini) "
        f"or pass `{flag} PROVIDER/MODEL`."
    )


def _show(span: str, limit: int = 80) -> str:
    """A span as printable text: invisible characters spelled as \\uXXXX."""
    text = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in span)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:5.2f}"


def render_text(report: TefReport, *, precision_threshold: float, reused: bool = False) -> str:
    """The readable report, worst problems first."""
    out: list[str] = []
    selector = report.selector
    how = " (lexical word overlap, not a model: its figures are notes)" if is_lexical(report) else ""
    out.append(
        f"lint of server '{report.server}': {len(report.tools)} tool(s); "
        f"selection test with {selector}{how}, "
        f"{report.selection_cases} quer{'y' if report.selection_cases == 1 else 'ies'} x {report.repeat}"
        + (" (reused: nothing changed since the last lint)" if reused else "")
    )
    blocking = lint_gate(report)
    if blocking:
        out += ["", "BLOCKING: accept with --accept-risk TOOL[:RULE] or fix the server"]
        out += [f"  ! {reason}" for reason in blocking]

    def security_lines(severity: str) -> list[str]:
        return [
            f"  [{f.severity}] {f.rule_id} {f.tool} {f.location} [{f.start}:{f.end}] "
            f'"{_show(f.span)}": {f.message}'
            for f in report.security
            if f.severity == severity
        ]

    def static_lines(severity: str) -> list[str]:
        lines = []
        for tool in report.tools:
            for f in tool.findings:
                if f.severity == severity:
                    lines.append(f"  [{f.severity}] {f.rule_id} {tool.name}: {f.message}")
                    if f.suggestion:
                        lines.append(f"      fix: {f.suggestion}")
        return lines

    _section(out, "Security", security_lines("error"))
    _section(out, "Errors", static_lines("error"))
    misleading = [f"  {t.name} is misleading: {_confusion_text(t)}" for t in report.tools if t.misleading]
    _section(out, "Misleading tools", misleading)
    _section(
        out,
        "Overlapping tools",
        [
            f"  {o.tool_a} ~ {o.tool_b}: score {o.score:.2f} (lexical {o.lexical:.2f}, "
            f"parameters {o.param_jaccard:.2f}); shared: {', '.join(o.shared_terms) or '-'}"
            for o in report.overlaps
        ],
    )
    _section(out, "Security warnings", security_lines("warning") + security_lines("info"))
    _section(out, "Warnings", static_lines("warning"))
    _section(out, "Selection warnings", [f"  {w}" for w in precision_warnings(report, precision_threshold)])
    if report.selection_cases:
        rows = ["  tool                              precision recall    f1  support  confusions"]
        if is_lexical(report):
            rows.insert(0, f"  {model_selection_hint()}")
        for tool in report.tools:
            rows.append(
                f"  {tool.name[:32]:<32}  {_fmt(tool.precision)}  {_fmt(tool.recall)} {_fmt(tool.f1)}"
                f"  {tool.support:>7}  {_confusion_text(tool) if tool.confusions else ''}"
            )
        _section(out, "Tool selection", rows)
    _section(out, "Drift since the last lint", _drift_lines(report.drift))
    _section(
        out, "Notes", static_lines("info") + [f"  {n}" for n in selection_notes(report, precision_threshold)]
    )
    if report.accepted_risks:
        _section(
            out,
            "Accepted risks",
            [f"  {r.tool or 'every tool'}: {r.rule_id} ({r.reason})" for r in report.accepted_risks],
        )
    s = report.summary
    selection = len(selection_findings(report, precision_threshold))
    kind = "note" if is_lexical(report) else "warning"
    out += [
        "",
        f"{s.errors} error(s), {s.warnings} warning(s), {s.infos} note(s), {s.security_findings} security "
        f"finding(s), {s.misleading_tools} misleading tool(s), {s.overlaps} overlapping pair(s), "
        f"{s.drift_changes} drift change(s)" + (f", {selection} selection {kind}(s)" if selection else ""),
    ]
    return "\n".join(out)


def _section(out: list[str], title: str, lines: list[str]) -> None:
    if lines:
        out += ["", f"{title}:", *lines]


def _confusion_text(tool: ToolEvaluation) -> str:
    parts = []
    for c in tool.confusions:
        if c.picked == tool.name:
            parts.append(f"picked instead of {c.expected} x{c.count}")
        else:
            parts.append(f"lost to {c.picked} x{c.count}")
    return "; ".join(parts)


def _drift_lines(drift: Drift) -> list[str]:
    lines = [f"  added: {name}" for name in drift.added]
    lines += [f"  removed: {name}" for name in drift.removed]
    for change in drift.changed:
        lines.append(f"  changed: {change.tool}")
        lines += [f"      {line}" for line in change.diff.splitlines()]
    return lines
