"""The page around the sections: one HTML file with its CSS and script inline, nothing fetched.

The script is plain JavaScript with one job: an evidence link (`a.evidence`,
or any `#step-…` address) opens the `<details>` that hold its step, scrolls to
it and marks it, so a bug in the table leads to the very call that showed it.
Without the script the links are still anchors to the steps.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from mcpipechekr import __version__
from mcpipechekr.report._data import ReportData
from mcpipechekr.report._html import esc, tag
from mcpipechekr.report._sections import DEFAULT_SECTIONS, Section

CSS = """
:root { --fg: #1d2330; --muted: #667085; --line: #d0d5dd; --bg-soft: #f5f7fa; --waste: #fff4e5;
  --waste-line: #f79009; --focus: #2e90fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0;
  padding: 0 24px 48px; max-width: 1200px; }
header { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
h1 { font-size: 22px; margin: 18px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 16px; margin: 20px 0 6px; } h4 { font-size: 14px; margin: 14px 0 6px; }
nav a { margin-right: 14px; }
.muted { color: var(--muted); }
.kpi-met { background: #ecfdf3; } .kpi-not_met { background: #fef3f2; font-weight: 600; }
.kpi-not_measured { color: var(--muted); }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; }
th, td { border: 1px solid var(--line); padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: var(--bg-soft); font-weight: 600; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--bg-soft); padding: 6px 8px;
  margin: 4px 0; border-radius: 4px; max-height: 420px; overflow: auto; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 6px; }
figcaption { text-align: center; }
svg.chart .grid { stroke: #eaecf0; } svg.chart .tick { font-size: 11px; fill: var(--muted); }
svg.chart polyline { fill: none; stroke-width: 2; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px;
  vertical-align: -1px; }
.severity-high td.severity { color: #b42318; font-weight: 600; }
.severity-medium td.severity { color: #b54708; }
a.evidence { white-space: nowrap; margin-right: 6px; }
table.bugs td:first-child { min-width: 200px; word-break: break-all; }
details.trace { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; padding: 4px 8px; }
details.trace > summary { cursor: pointer; }
details.trace .task { font-weight: 600; }
.status-completed { color: #067647; }
.status-error, .status-timeout, .status-incomplete, .status-errored { color: #b42318; }
.wasted-count { color: #b54708; }
ol.steps { padding-left: 0; list-style: none; }
li.step { border-left: 3px solid var(--line); margin: 6px 0; padding: 2px 0 2px 10px; }
li.step.model { border-left-color: #98a2b3; }
li.step.tool_call { border-left-color: #53b1fd; }
li.step.wasted { background: var(--waste); border-left-color: var(--waste-line); }
li.step.focus { outline: 3px solid var(--focus); outline-offset: 2px; }
.step-head { font-weight: 600; }
.wasted-by { margin-left: 10px; color: #b54708; font-weight: 400; }
.error { color: #b42318; }
pre.thinking { color: #475467; font-style: italic; }
.cut { color: var(--muted); font-style: italic; }
.problems { border: 1px solid #fda29b; background: #fef3f2; padding: 6px 10px; border-radius: 6px; }
"""

SCRIPT = """
(function () {
  function reveal(id) {
    var target = document.getElementById(id);
    if (!target) return false;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === 'DETAILS') node.open = true;
    }
    var marked = document.querySelectorAll('.focus');
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove('focus');
    target.classList.add('focus');
    target.scrollIntoView({block: 'center'});
    return true;
  }
  document.addEventListener('click', function (event) {
    var link = event.target.closest ? event.target.closest('a.evidence') : null;
    if (!link) return;
    var id = link.getAttribute('data-target');
    if (id && reveal(id)) {
      event.preventDefault();
      history.replaceState(null, '', '#' + id);
    }
  });
  function fromAddress() {
    if (location.hash.length > 1) reveal(decodeURIComponent(location.hash.slice(1)));
  }
  window.addEventListener('hashchange', fromAddress);
  fromAddress();
})();
"""


CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()}'"
)
"""Nothing is fetched, and no script runs but the page's own (by its hash): a second line of defence
behind the escaping, should a value from a trace ever reach the page as markup."""


def render_report(data: ReportData, sections: Sequence[Section] = DEFAULT_SECTIONS) -> str:
    """The whole page: a heading naming the runs covered, a table of contents, then each section."""
    rendered = [(section, body) for section in sections if (body := section.render(data)) is not None]
    ids = [run.run_id for run in data.runs]
    covered = (
        f"{ids[0]}" if len(ids) == 1 else f"{len(ids)} runs, {ids[0]} to {ids[-1]}" if ids else "no runs"
    )
    nav = tag("nav", "".join(tag("a", esc(section.title), href=f"#{section.key}") for section, _ in rendered))
    header = tag(
        "header",
        tag("h1", "MCPipeChekr report")
        + tag("p", esc(f"{covered}; written by MCPipeChekr {__version__}."), class_="muted")
        + nav,
    )
    body = "".join(
        tag("section", tag("h2", esc(section.title)) + html, id=section.key, class_="report-section")
        for section, html in rendered
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        f"<title>{esc('MCPipeChekr report: ' + covered)}</title>"
        f"<style>{CSS}</style></head>\n<body>{header}{body}<script>{SCRIPT}</script></body></html>\n"
    )
