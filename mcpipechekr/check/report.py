"""The three shapes of a check report: text for people, JSON for tools, JUnit XML for CI dashboards.

- Text groups the verdicts by layer, then by group, one line per check with its
  reason, and ends with the summary line. It is built as rich `Text`, so the
  same lines print in colour on a terminal and plain into a file or a pipe
  (rich honours `NO_COLOR` and non-tty output).
- JSON is the `CheckReport` itself (the check_report.json format).
- JUnit has one testsuite per layer and one testcase per check. A FAIL is a
  `<failure>`; a SKIP and an expected failure are `<skipped>` (so CI stays green
  on a listed failure, and a stale listing is its own failing testcase); a WARN
  passes with its reason in `<system-out>`, since JUnit has no warning state.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Literal

from rich.text import Text

from mcpipechekr._util.yamledit import flow_list
from mcpipechekr.artifacts.atomic import dumps_json
from mcpipechekr.artifacts.check_report import LAYERS, CheckReport, CheckResult, CheckSummary, Coverage
from mcpipechekr.check.answers import one_line

Format = Literal["text", "json", "junit"]
FORMATS: tuple[Format, ...] = ("text", "json", "junit")

LAYER_TITLES = {
    "protocol": "Protocol compliance",
    "functional": "Functional cases",
    "quality": "Response quality",
}
STYLES = {"PASS": "green", "FAIL": "bold red", "WARN": "yellow", "SKIP": "dim", "XFAIL": "magenta"}
_LABEL_WIDTH_CAP = 64
_SIZES_SHOWN = 10
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def render(report: CheckReport, output_format: Format) -> str:
    """The report as one document in the given format (text without colour)."""
    if output_format == "json":
        return to_json(report)
    if output_format == "junit":
        return to_junit(report)
    return "\n".join(line.plain for line in text_lines(report)) + "\n"


# --- text -----------------------------------------------------------------------------------------


def title(report: CheckReport) -> str:
    return "MCP Protocol Compliance Report" if report.layers == ["protocol"] else "MCP Server Check Report"


def text_lines(report: CheckReport, *, rerun: str = "mcpipechekr check") -> Iterator[Text]:
    """The text report, line by line, with styles for a terminal.

    `rerun` is the command that checks the same server again (its --config or
    server flags), which the read-only suggestion at the end extends.
    """
    width = min(_LABEL_WIDTH_CAP, max((len(_label(result)) for result in report.checks), default=0) + 4)
    yield Text(title(report), style="bold")
    yield Text(f"Server: {report.server} ({report.target})")
    for layer in LAYERS:
        results = [result for result in report.checks if result.layer == layer]
        if layer not in report.layers and not results:
            continue
        yield Text("")
        yield Text(LAYER_TITLES[layer], style="bold underline")
        groups: dict[str, list[CheckResult]] = {}
        for result in results:
            groups.setdefault(result.group, []).append(result)
        for group, members in groups.items():
            yield Text(group, style="bold")
            for result in members:
                yield from _result_lines(result, width)
        if layer == "quality" and report.sizes:
            yield from _size_lines(report)
    if report.coverage is not None:
        yield Text("")
        yield from coverage_lines(report.coverage)
    if report.trusted_read_only or report.refused_trust:
        yield Text("")
        yield from trust_lines(report)
    yield Text("")
    yield summary_line(report.summary)
    if report.read_only_candidates:
        yield Text("")
        yield from suggestion_lines(report, rerun)


def trust_lines(report: CheckReport) -> Iterator[Text]:
    """Which tools were called on the author's word rather than their annotations, by whom; who was not."""
    yield Text("Trusted as read-only (not annotated so; called on the author's word)", style="bold underline")
    for entry in report.trusted_read_only:
        recorded = " (recorded in config.yaml check.read_only)" if entry.recorded else ""
        yield Text(f"  {entry.tool}: trusted by {entry.by}{recorded}")
    for refused in report.refused_trust:
        line = Text("  ")
        line.append("not trusted", style=STYLES["WARN"])
        line.append(f": {refused.tool} ({refused.by}): {refused.reason}")
        yield line


def suggestion_lines(report: CheckReport, rerun: str) -> Iterator[Text]:
    """The tools that look read-only but were not called, and the command and config lines to trust them.

    A suggestion only: the author decides, since a name and a description can
    mislead (check/trust.py says how the candidates are picked).
    """
    names = [candidate.tool for candidate in report.read_only_candidates]
    yield Text("Tools that look read-only but are not annotated so (none of them was called):", style="bold")
    for candidate in report.read_only_candidates:
        yield Text(f"  {candidate.tool}: {candidate.why}")
    yield Text("If they only read, trust them (in a project folder config.yaml records it for later runs):")
    yield Text(f"  `{rerun} --trust-read-only {','.join(names)}`")
    yield Text("or add to config.yaml:")
    yield Text("  check:")
    yield Text(f"    read_only: {flow_list(names)}")


def _label(result: CheckResult) -> str:
    return f"{result.id} {result.name}"


def _result_lines(result: CheckResult, width: int) -> Iterator[Text]:
    label = _label(result)
    dots = "." * max(3, width - len(label))
    expected = result.expected_failure is not None and result.status == "FAIL"
    shown = "XFAIL" if expected else result.status
    reason_lines = result.reason.strip().splitlines()
    line = Text(f"  {label} {dots} ")
    line.append(shown, style=STYLES[shown])
    if reason_lines:
        line.append(f" ({reason_lines[0]})" if len(reason_lines) == 1 else f" {reason_lines[0]}")
    if expected:
        line.append(f" [expected failure: {result.expected_failure}]", style="magenta")
    yield line
    for extra in reason_lines[1:]:
        yield Text(f"      {extra.strip()}", style="dim")


def _size_lines(report: CheckReport) -> Iterator[Text]:
    yield Text("Largest responses", style="bold")
    for size in report.sizes[:_SIZES_SHOWN]:
        line = Text(
            f"  {size.tokens_estimated:>8,} tokens  {size.chars:>9,} chars  {size.tool} ({size.source})"
            f"  budget {size.budget_tokens:,}"
        )
        if size.over_budget:
            line.append("  over budget", style="yellow")
        yield line
    if len(report.sizes) > _SIZES_SHOWN:
        yield Text(f"  … {len(report.sizes) - _SIZES_SHOWN} more in the JSON report", style="dim")


_NOT_REACHED = {
    "not_reached": "not reached",
    "failed": "failed",
    "needs_network": "needs network",
    "no_arguments": "no arguments",
    "not_called": "not called",
}


def coverage_lines(coverage: Coverage) -> Iterator[Text]:
    """`Coverage: 7/9 callable tools reached`, then each tool not reached with its last error."""
    yield Text("Coverage", style="bold underline")
    if not coverage.callable_tools:
        yield Text(
            "  no tool may be called: none is annotated read-only, trusted as read-only "
            "or opted in (see PC-10)"
        )
        return
    line = Text(f"  {coverage.reached}/{coverage.callable_tools} callable tools reached")
    line.append(" (answered a call without isError; read-only or opted-in tools)", style="dim")
    yield line
    for entry in coverage.tools:
        if entry.status == "reached":
            continue
        label = STYLES["FAIL" if entry.status == "failed" else "WARN"]
        shown = Text("  ")
        shown.append(_NOT_REACHED[entry.status], style=label)
        shown.append(f": {entry.tool}" + (f" ({entry.error})" if entry.error else ""))
        yield shown


def summary_line(summary: CheckSummary) -> Text:
    """`Summary: 41/43 passed, 1 failed, 1 skipped`, plus warnings and expected or stale failures."""
    parts = [f"{summary.passed}/{summary.total} passed", f"{summary.failed} failed"]
    for count, label in (
        (summary.warned, "warned"),
        (summary.skipped, "skipped"),
        (summary.expected_failures, "expected to fail"),
        (summary.stale_expected_failures, "listed as expected failures but passing"),
    ):
        if count:
            parts.append(f"{count} {label}")
    style = "bold red" if summary.failed or summary.stale_expected_failures else "bold green"
    return Text("Summary: " + ", ".join(parts), style=style)


# --- json -----------------------------------------------------------------------------------------


def to_json(report: CheckReport) -> str:
    return dumps_json(report.model_dump(mode="json", by_alias=True)).decode("utf-8")


# --- junit ----------------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    """XML 1.0 cannot carry most control characters (a server's stderr may contain them)."""
    return _XML_INVALID.sub("?", text)


def to_junit(report: CheckReport) -> str:
    """JUnit XML: `<testsuites>` with one `<testsuite>` per layer that ran."""
    root = ET.Element("testsuites", name=f"mcpipechekr check {report.server}")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    elapsed = (report.finished_at - report.started_at).total_seconds()
    for layer in LAYERS:
        results = [result for result in report.checks if result.layer == layer]
        if not results:
            continue
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{layer}",
            timestamp=report.started_at.isoformat(),
            errors="0",
        )
        counts = {"tests": len(results), "failures": 0, "skipped": 0}
        for result in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{report.server}.{layer}.{result.group}",
                name=f"{result.id} {result.name}",
                time=f"{result.duration_ms / 1000:.3f}",
            )
            reason = _xml_text(result.reason)
            first = one_line(reason) or result.status
            if result.status == "FAIL" and result.expected_failure is None:
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=first, type="FAIL").text = reason
            elif result.status == "FAIL":
                counts["skipped"] += 1
                why = _xml_text(result.expected_failure or "")
                ET.SubElement(case, "skipped", message=f"expected failure: {why}").text = reason
            elif result.status == "SKIP":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=first)
            elif reason:
                ET.SubElement(case, "system-out").text = f"{result.status}: {reason}"
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{sum(r.duration_ms for r in results) / 1000:.3f}")
    _trust_properties(root, report)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{elapsed:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _trust_properties(root: ET.Element, report: CheckReport) -> None:
    """The trust decisions as `<properties>` of the first suite: which tools were trusted, by whom."""
    suites = root.findall("testsuite")
    if not suites or not (report.trusted_read_only or report.refused_trust):
        return
    properties = ET.Element("properties")
    for entry in report.trusted_read_only:
        ET.SubElement(properties, "property", name=f"trusted-read-only:{entry.tool}", value=entry.by)
    for refused in report.refused_trust:
        value = _xml_text(f"{refused.by}: {refused.reason}")
        ET.SubElement(properties, "property", name=f"refused-trust:{refused.tool}", value=value)
    suites[0].insert(0, properties)
