"""Phase 0.5, `lint`: the tool descriptions scored before any agent runs, in a run folder or on its own.

In a run (doit's `lint` target, ahead of every trace) the step lints the
run's pinned tools.json, writes tef_report.json, and is the gate: a blocking
risk nobody accepted (now, at a terminal, or earlier with `mcpipechekr lint
--accept-risk`) stops the run before Phase 1, and the manifest records every
risk the run goes on with. Without a run folder (`mcpipechekr lint` on any
server) the server is started for its tools and the outcome is returned for
the command to render; its exit code says whether something blocks.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import AcceptedRisk, RunDir, ToolsSnapshot, read_model, write_model
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint import LintOutcome, confirm_lint_risks, lint, lint_gate, write_tef_report
from mcpipechekr.lint.changes import changes_since_last_lint
from mcpipechekr.lint.report import is_lexical, model_selection_hint
from mcpipechekr.lint.risks import blocking_findings
from mcpipechekr.steps.stage import run_stage

GATE_STOP = (
    "stopped before Phase 1: lint found risks nobody accepted. Review them with "
    "`mcpipechekr lint`, then accept with `mcpipechekr lint --accept-risk TOOL` or fix the descriptions."
)


def lint_step(
    config: Config,
    run_dir: RunDir | None = None,
    *,
    repeat: int = 1,
    accept_risks: Iterable[str | AcceptedRisk] = (),
    accept_reason: str | None = None,
    use_cache: bool = True,
    interactive: bool | None = None,
    out: Console = console,
) -> LintOutcome:
    """Lint the server's tool descriptions (see `lint.orchestrate.lint` for the options); return the outcome.

    With `run_dir`: its tools.json is linted, tef_report.json written, and the
    summary goes to `out` with only what changed since the previous lint of the
    server (`lint.changes`: new findings, those of new or changed tools, resolved
    ones, and a count of the unchanged ones kept in tef_report.json); UserError
    stops the run when a risk blocks (`interactive`, default: stdin is a
    terminal, lets a person accept it). Either way this lint's lines are
    recorded for the next one to compare with.
    """
    interactive = sys.stdin.isatty() if interactive is None else interactive
    stage = run_stage(config, run_dir, "lint") if run_dir is not None else contextlib.nullcontext()
    with stage as manifest:
        outcome = lint(
            config,
            repeat=repeat,
            accept_risks=accept_risks,
            accept_reason=accept_reason,
            tools=read_model(run_dir.tools, ToolsSnapshot) if run_dir is not None else None,
            use_cache=use_cache,
        )
        threshold = config.thresholds.tef_precision_warning
        changes = changes_since_last_lint(config.paths.home, outcome.report, threshold)
        if run_dir is None:
            return outcome
        assert manifest is not None  # the run's snapshot step made it
        write_tef_report(run_dir, outcome.report)
        summary = outcome.report.summary
        out.print(
            f"lint ({outcome.report.selector}{', reused' if outcome.reused else ''}): "
            f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.overlaps} overlapping "
            f"pair(s), {summary.misleading_tools} misleading tool(s), {summary.security_findings} security "
            f"finding(s) → {display_path(run_dir.tef_report)}",
            markup=False,
        )
        for line in changes.render():
            out.print(line, markup=False, highlight=False)
        if changes.selection_shown and is_lexical(outcome.report):
            out.print(f"  {model_selection_hint()}", markup=False, highlight=False)
        accepted = list(outcome.report.accepted_risks)
        if lint_gate(outcome.report) and interactive and confirm_lint_risks(outcome.report, out):
            accepted += [
                AcceptedRisk(rule_id=rule, tool=tool, reason="accepted at the lint gate of `doit loop`")
                for rule, tool, _ in blocking_findings(outcome.report)
            ]
        # The manifest records every risk the run goes on with, accepted now or by `lint --accept-risk`.
        write_model(run_dir.manifest, manifest.model_copy(update={"accepted_risks": accepted}))
        blocking = lint_gate(outcome.report, accepted)
        for reason in blocking:
            out.print(f"  [red]blocking:[/] {reason}")
        if blocking:
            raise UserError(GATE_STOP)
    return outcome
