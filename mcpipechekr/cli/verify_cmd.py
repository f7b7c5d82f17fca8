"""`mcpipechekr verify`: run a finding's case against a server and move the finding's lifecycle."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr._util.fields import MAX_REPEAT
from mcpipechekr.cli.common import writes_project
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import close_manually
from mcpipechekr.findings.verification.generate import find_finding
from mcpipechekr.findings.verification.verify import verify_finding
from mcpipechekr.server.target import resolve_server


@click.command("verify")
@click.option("--finding", "finding_id", metavar="ID", required=True, help="The finding (finding-<16 hex>).")
@click.option("--case", "case_id", metavar="NAME", help="The case of the manifest to run.")
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The verification manifest (from `mcpipechekr generate`).",
)
@click.option(
    "--url", "server_url", metavar="URL", help="Verify against a streamable-HTTP server at this URL."
)
@click.option(
    "--header",
    "server_headers",
    metavar="NAME:VALUE",
    multiple=True,
    help="HTTP header sent to the --url server; repeatable.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds allowed for each call [default: the case's timeout_s, else 30].",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1, max=MAX_REPEAT),
    help="Repeat the case this many times [default: sized from the finding's failure rate, at least 3].",
)
@click.option(
    "--run-id",
    metavar="ID",
    help="Id of this verification run [default: a new UUID]. Recording an id again changes nothing.",
)
@click.option(
    "--close-manually",
    "close_note",
    metavar="NOTE",
    help="Close a finding that has no probe, saying why; nothing is run.",
)
@click.argument("server_command", nargs=-1, type=click.UNPROCESSED, metavar="[-- SERVER COMMAND…]")
@click.pass_context
@writes_project
def verify_command(
    ctx: click.Context,
    finding_id: str,
    case_id: str | None,
    manifest_path: Path | None,
    server_url: str | None,
    server_headers: tuple[str, ...],
    timeout_s: float | None,
    attempts: int | None,
    run_id: str | None,
    close_note: str | None,
    server_command: tuple[str, ...],
) -> None:
    """Run a finding's case and record the result: green extends the streak, red reopens.

    Give the stdio server's command after `--` (`-- python server.py`) or
    `--url`. The case is repeated (sized from the finding's failure rate) and is
    green only if every attempt passes. States: open, fix-claimed, verifying,
    closed; three consecutive greens under one credit binding (case, manifest
    version, timeout, target, harness version, server files) close a finding,
    and a red reopens it, printing `reason=…` and a `hint:` line. See
    docs/findings.md.

    Exit codes: 0 green (or closed by hand); 1 red; 2 bad input, or the server
    could not be reached (nothing is recorded then).
    """
    home = Home.resolve()
    if close_note is not None:
        if case_id or manifest_path or server_url or server_command:
            raise UserError("--close-manually runs nothing: leave out --case, --manifest and the server")
        transition = close_manually(home, find_finding(home, finding_id), close_note)
        _echo(f"{finding_id}: closed by hand ({transition.from_state} -> closed)")
        return
    if not case_id or not manifest_path:
        raise UserError("give --case NAME and --manifest FILE (from `mcpipechekr generate`)")
    if bool(server_command) == bool(server_url):
        raise UserError("give the server once: its command after `--`, or --url")
    server = resolve_server(
        None,
        command=shlex.join(server_command) if server_command else None,
        url=server_url,
        headers=server_headers,
        base_dir=Path.cwd(),
    )
    result = verify_finding(
        home,
        finding_id,
        case_id,
        manifest_path,
        server,
        origin="cli",
        timeout_s=timeout_s,
        attempts=attempts,
        run_id=run_id,
    )
    for line in result.lines():
        _echo(line)
    ctx.exit(0 if result.passed else 1)


def _echo(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)
