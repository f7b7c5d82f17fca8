"""`mcpipechekr annotate`: say what the record of one captured call cannot."""

from __future__ import annotations

import click

from mcpipechekr.cli.common import writes_project
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.promotion.annotate import ANNOTATION_KINDS, MAX_NOTE_CHARS, add_annotation


@click.command("annotate")
@click.option("--event-id", "event_id", metavar="UUID", required=True, help="The call's `event_id`.")
@click.option(
    "--kind",
    type=click.Choice(ANNOTATION_KINDS),
    required=True,
    help="false-success: it succeeded but did not do what was asked; expected: the error was the right "
    "answer; workaround: how the caller got around the failure.",
)
@click.option("--note", required=True, help=f"One line of plain text, at most {MAX_NOTE_CHARS} characters.")
@writes_project
def annotate_command(event_id: str, kind: str, note: str) -> None:
    """Annotate one captured call, for the next `mcpipechekr promote`.

    The annotation is stored whether or not the call is indexed; `promote`
    links it when the index holds a captured call it fits (a success for
    false-success, an error for expected and workaround) and leaves it
    unlinked otherwise, so it cannot change a finding. Notes never appear in
    findings output. The findings home is $MCPIPECHEKR_HOME (default
    .mcpipechekr/). Exits 0 when stored, 2 for bad input.
    """
    annotation = add_annotation(Home.resolve(), event_id, kind, note)
    click.echo(
        f"stored annotation {annotation.id}: {annotation.kind} on {annotation.event_id}; "
        "`mcpipechekr promote` links it to the index"
    )
