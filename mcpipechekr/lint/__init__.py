"""Phase 0.5: tool-description lint — static rules, overlap, tool selection, security and drift.

`run_lint(config, …)` is the library call the CLI (`mcpipechekr lint`) and the
doit graph share; `write_tef_report` writes its result into a run folder and
`lint_gate` says whether the pipeline may go on. docs/lint.md describes every
rule and score.
"""

import logging

from mcpipechekr.lint.orchestrate import LintOutcome, lint, run_lint
from mcpipechekr.lint.report import precision_warnings, render_text, write_tef_report
from mcpipechekr.lint.risks import confirm_lint_risks, lint_gate, parse_accept_risk

# A library logs; the application decides where logs go (the CLI prints warnings in its report).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "LintOutcome",
    "confirm_lint_risks",
    "lint",
    "lint_gate",
    "parse_accept_risk",
    "precision_warnings",
    "render_text",
    "run_lint",
    "write_tef_report",
]
