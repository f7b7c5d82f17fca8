"""`mcpipechekr promote`: recurring groups of captured failures become findings."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from mcpipechekr.cli.common import writes_project
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.promotion.promote import promote


def _as_of(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--as-of: `{value}` is not an ISO 8601 time, e.g. 2025-03-01T12:00:00Z or 2025-03-01."
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@click.command("promote")
@click.option(
    "--threshold",
    type=float,
    metavar="X",
    help="Score a group must reach (finite, >= 0) [default: config.json's promotion_threshold, "
    "else the calibrated default].",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    help="Measure recency as of this ISO 8601 time instead of now (to reproduce an earlier ranking).",
)
@writes_project
def promote_command(threshold: float | None, as_of: str | None) -> None:
    """Turn recurring groups of captured failures into findings.

    Failing calls are grouped by server, tool and error template; successful
    calls annotated as false successes form groups per server and tool. A
    group becomes a finding when its score (docs/findings.md) meets the
    threshold and it was seen in at least two sessions. Annotations are linked
    to the index first. The findings home is $MCPIPECHEKR_HOME (default
    .mcpipechekr/). Exits 0, 2 for bad input, 3 when the index is missing,
    corrupt or incomplete (run `mcpipechekr index`).
    """
    result = promote(Home.resolve(), threshold=threshold, now=_as_of(as_of))
    click.echo(result.summary())
    for finding in result.promoted:
        marker = "new " if finding.id in result.new else ""
        click.echo(
            f"  {marker}{finding.id}  {finding.severity}  {finding.defect_class}  "
            f"{finding.server}/{finding.tool}  score {finding.score:.3f}"
        )
    if result.annotations:
        counts = ", ".join(f"{result.annotations.get(s, 0)} {s}" for s in ("linked", "unknown", "ambiguous"))
        click.echo(f"annotations: {counts}")
