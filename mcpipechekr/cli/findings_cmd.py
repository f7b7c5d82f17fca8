"""`mcpipechekr findings`: the registered findings, sanitized, for an agent, a person or a tool."""

from __future__ import annotations

import click

from mcpipechekr.findings.home import Home
from mcpipechekr.findings.promotion.promote import registered_findings
from mcpipechekr.findings.views.render import STATE_ORDER, render


@click.command("findings")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["agent", "md", "json"]),
    default="agent",
    show_default=True,
    help="agent: compact text for a coding agent; md: markdown; json: every field, with `retryable`.",
)
@click.option(
    "--state",
    "states",
    type=click.Choice(STATE_ORDER),
    multiple=True,
    help="Only findings in this state (repeatable) [default: all].",
)
def findings_command(output_format: str, states: tuple[str, ...]) -> None:
    """Show the findings: class, fix hint, severity, rates, sessions, argument shapes.

    Output holds identifiers, aggregates and argument shapes only: never error
    texts, notes, sessions, the salt or argument values. The findings home is
    $MCPIPECHEKR_HOME (default .mcpipechekr/). Exits 0 (with a one-line
    explanation on stderr when there is nothing to show), 3 when the index is
    missing, corrupt or incomplete (run `mcpipechekr index`).
    """
    findings = registered_findings(Home.resolve(), states)
    if not findings:
        if states:
            click.echo(f"no findings in state {', '.join(states)}.", err=True)
        else:
            click.echo(
                "no findings: nothing has recurred in two sessions above the threshold yet "
                "(`mcpipechekr promote` registers findings from the index).",
                err=True,
            )
        return
    click.echo(render(findings, output_format), nl=False)  # type: ignore[arg-type]
