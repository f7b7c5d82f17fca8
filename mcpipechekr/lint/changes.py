"""What a lint found that the previous lint of the same server did not: the loop prints only that.

`doit loop` lints at the start of every iteration. Printing every note and
warning each time buries the one that matters (a fix that made a tool steal
another's queries) under the ones the person has read already. So each lint
records the lines it could show under `paths.home/lint/<server>.shown.json`,
and the loop prints only:

- the lines of tools that are new or whose definition changed since the last
  lint (the report's drift), whether or not their text is new;
- lines no earlier lint had (a selection figure that moved, a new overlap);
- lines the previous lint had and this one does not: resolved, or gone with
  a tool the server no longer lists;

then one line counting the unchanged ones, which stay in tef_report.json.
`mcpipechekr lint` prints its whole report as before and records its lines
too, so the next iteration of the loop starts from what was last shown.

A line is keyed by what it is about (rule, tool, and the message for static
and security findings; the tool for its selection figure; the pair for an
overlap), so a selection note whose figure changes is shown again with its
new figure, not once as new and once as resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from mcpipechekr.artifacts._base import ArtifactModel, FormatVersion
from mcpipechekr.artifacts.atomic import read_model, write_model
from mcpipechekr.artifacts.tef_report import TefReport
from mcpipechekr.lint.report import is_lexical, selection_findings

SHOWN_LIMIT = 20
"""New lines printed at most per lint; the rest are counted (all are in tef_report.json)."""


class ShownLines(ArtifactModel):
    """paths.home/lint/<server>.shown.json: the finding lines of the last lint, for the next to compare."""

    version: FormatVersion = 1
    server: str = Field(min_length=1)
    lines: dict[str, str] = Field(default_factory=dict, description="Key of each finding -> its line.")


@dataclass
class LintChanges:
    """The lines to print for one lint against the previous one of the same server."""

    new: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Lines of tools the server no longer lists: gone with their tool, not fixed."""
    unchanged: int = 0
    first: bool = True
    selection_shown: bool = False

    def render(self, limit: int = SHOWN_LIMIT) -> list[str]:
        """The lines as the loop prints them: new ones (up to `limit`), resolved ones, then the count."""
        out = [f"  {line}" for line in self.new[:limit]]
        if len(self.new) > limit:
            out.append(f"  … and {len(self.new) - limit} more new finding(s) in tef_report.json")
        out += [f"  resolved: {line}" for line in self.resolved[:limit]]
        if len(self.resolved) > limit:
            out.append(f"  … and {len(self.resolved) - limit} more resolved")
        out += [f"  gone with its tool: {line}" for line in self.removed[:limit]]
        if len(self.removed) > limit:
            out.append(f"  … and {len(self.removed) - limit} more gone with their tools")
        if self.unchanged:
            out.append(
                f"  {self.unchanged} unchanged finding(s) since the last lint, not repeated: "
                "kept in tef_report.json (`mcpipechekr lint` prints them all)"
            )
        return out


def shown_path(home: Path, server: str) -> Path:
    """paths.home/lint/<server>.shown.json."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", server) or "server"
    return Path(home) / "lint" / f"{safe}.shown.json"


def finding_lines(report: TefReport, precision_threshold: float) -> dict[str, tuple[str, str]]:
    """Every line a lint could print, by key: (the tool it is about, or "" for none; the line)."""
    lines: dict[str, tuple[str, str]] = {}
    for finding in report.security:
        key = f"security|{finding.tool}|{finding.rule_id}|{finding.location}|{finding.span}"
        lines[key] = (
            finding.tool,
            f"[{finding.severity}] {finding.rule_id} {finding.tool}: {finding.message}",
        )
    for tool in report.tools:
        for f in tool.findings:
            lines[f"static|{tool.name}|{f.rule_id}|{f.message}"] = (
                tool.name,
                f"[{f.severity}] {f.rule_id} {tool.name}: {f.message}",
            )
        if tool.misleading:
            lines[f"misleading|{tool.name}"] = (tool.name, f"[error] TEF-M001 {tool.name} is misleading")
    for overlap in report.overlaps:
        lines[f"overlap|{overlap.tool_a}|{overlap.tool_b}"] = (
            overlap.tool_a,
            f"overlap: {overlap.tool_a} ~ {overlap.tool_b} (score {overlap.score:.2f})",
        )
    kind = "note" if is_lexical(report) else "warning"
    for tool_name, text in selection_findings(report, precision_threshold):
        lines[f"selection|{tool_name}"] = (tool_name, f"[{kind}] {text}")
    return lines


def _load(home: Path, server: str) -> ShownLines | None:
    path = shown_path(home, server)
    if not path.exists():
        return None
    try:
        return read_model(path, ShownLines)
    except Exception:  # unreadable: this lint shows everything and rewrites it
        return None


def changes_since_last_lint(home: Path, report: TefReport, precision_threshold: float) -> LintChanges:
    """Compare this lint's lines with the previous lint's of the same server, and record this lint's."""
    current = finding_lines(report, precision_threshold)
    previous = _load(home, report.server)
    write_model(
        shown_path(home, report.server),
        ShownLines(server=report.server, lines={key: line for key, (_, line) in current.items()}),
    )
    if previous is None:
        return LintChanges(
            new=[line for _, line in current.values()],
            first=True,
            selection_shown=any(key.startswith("selection|") for key in current),
        )
    touched = set(report.drift.added) | {change.tool for change in report.drift.changed}
    new_keys = [
        key for key, (tool, line) in current.items() if tool in touched or previous.lines.get(key) != line
    ]
    gone = [key for key in previous.lines if key not in current]
    removed = set(report.drift.removed)
    return LintChanges(
        new=[current[key][1] for key in new_keys],
        resolved=[previous.lines[key] for key in gone if key.split("|")[1] not in removed],
        removed=[previous.lines[key] for key in gone if key.split("|")[1] in removed],
        unchanged=len(current) - len(new_keys),
        first=False,
        selection_shown=any(key.startswith("selection|") for key in new_keys),
    )
