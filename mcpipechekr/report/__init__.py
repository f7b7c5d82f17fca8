"""Reports for people that read a project's runs: each module renders what the artifacts hold.

The HTML report (`write_report`): a run, or the iterations of a loop, in one
self-contained file, with per-task charts across iterations, each run's bug
table with links to the evidence steps, and a trace viewer. It is built from
the run folders' artifacts alone (`_data`), rendered as escaped markup
(`_html`, `_charts`, `_traces`, `_sections`) inside one page with inline CSS
and script (`_page`), and written atomically (`_write`). A report is a list of
sections, each a function from the report's data to a fragment: `Section` and
`DEFAULT_SECTIONS` are how another part of the report is added.

The comparison of two runs (`compare`, `compare_stats`, `compare_text`,
`compare_html`) is `mcpipechekr compare`, and a section of the HTML report.
"""

from mcpipechekr.report._data import ReportData, RunData, TraceData, load_report_data
from mcpipechekr.report._html import attrs, esc, tag, text
from mcpipechekr.report._page import CONTENT_SECURITY_POLICY, CSS, SCRIPT, render_report
from mcpipechekr.report._sections import DEFAULT_SECTIONS, Section
from mcpipechekr.report._traces import render_trace, step_id
from mcpipechekr.report._write import REPORT_FILE, default_output, report_runs, write_report

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSS",
    "DEFAULT_SECTIONS",
    "REPORT_FILE",
    "ReportData",
    "RunData",
    "Section",
    "TraceData",
    "SCRIPT",
    "attrs",
    "default_output",
    "esc",
    "load_report_data",
    "render_report",
    "render_trace",
    "report_runs",
    "step_id",
    "tag",
    "text",
    "write_report",
]
