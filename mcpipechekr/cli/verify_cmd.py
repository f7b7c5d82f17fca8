"""`mcpipechekr verify`: run a finding's case against a server and move the finding's lifecycle."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from mcpipechekr._util.console import console
from mcpipechekr._util.fields import MAX_REPEAT
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.cli.common import writes_project
from mcpipechekr.config import DEFAULT_CONFIG_FILE, ServerConfig, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.states import close_manually
from mcpipechekr.findings.verification.acceptance import describe_case, record_acceptance
from mcpipechekr.findings.verification.case_files import case_file
from mcpipechekr.findings.verification.case_manifest import load_manifest
from mcpipechekr.findings.verification.generate import find_finding
from mcpipechekr.findings.verification.verify import verify_finding
from mcpipechekr.server.target import resolve_server


@click.command("verify")
@click.option("--finding", "finding_id", metavar="ID", required=True, help="The finding (finding-<16 hex>).")
@click.option(
    "--case", "case_id", metavar="NAME", help="The case of the manifest to run [default: the finding id]."
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The verification manifest (from `mcpipechekr generate`) [default: the case file "
    "`mcpipechekr serve` wrote for the finding, when there is one].",
)
@click.option(
    "--accept-case",
    is_flag=True,
    help="Show the case and, once you confirm at a terminal, accept it as evidence for the finding; "
    "then run it. Only runs of an accepted case count toward closing a finding.",
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
    accept_case: bool,
    server_command: tuple[str, ...],
) -> None:
    """Run a finding's case and record the result: green extends the streak, red reopens.

    Give the stdio server's command after `--` (`-- python server.py`) or
    `--url`; in a project folder, config.yaml's server is the default. The
    case is repeated (sized from the finding's failure rate) and is green only
    if every attempt passes. States: open, fix-claimed, verifying, closed;
    three consecutive greens under one credit binding (case, manifest version,
    timeout, target, harness version, server files) close a finding, and a red
    reopens it, printing `reason=…` and a `hint:` line.

    Only a case a person accepted counts (`--accept-case`, once per case: it
    shows the case and asks at a terminal), and only a run of the finding's own
    server. See docs/findings.md.

    Exit codes: 0 green (or closed by hand, or accepted); 1 red (or not
    accepted); 2 bad input, or the server could not be reached (nothing is
    recorded then).
    """
    home = Home.resolve()
    if close_note is not None:
        if case_id or manifest_path or server_url or server_command or accept_case:
            raise UserError(
                "--close-manually runs nothing: leave out --case, --manifest, --accept-case and the server"
            )
        transition = close_manually(home, find_finding(home, finding_id), close_note)
        _echo(f"{finding_id}: closed by hand ({transition.from_state} -> closed)")
        return
    finding = find_finding(home, finding_id)
    manifest_path = manifest_path or _drafted_case(home, finding.id)
    case_id = case_id or finding.id
    if server_command and server_url:
        raise UserError("give the server once: its command after `--`, or --url")
    server = _server(server_command, server_url, server_headers, needed=not accept_case)
    if accept_case:
        if not _accepted_at_terminal(home, finding, manifest_path, case_id):
            ctx.exit(1)
        if server is None:
            _echo(
                "to run it now: give the server after `--` (or --url), or run this in its project folder: "
                + shlex.join(
                    [
                        "mcpipechekr",
                        "verify",
                        "--finding",
                        finding.id,
                        "--case",
                        case_id,
                        "--manifest",
                        str(manifest_path),
                        "--",
                        "SERVER",
                        "COMMAND",
                    ]
                )
            )
            return
    assert server is not None
    result = verify_finding(
        home,
        finding,
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


def _drafted_case(home: Home, finding_id: str) -> Path:
    """The case file `mcpipechekr serve` wrote for the finding, when `--manifest` was left out."""
    drafted = case_file(home, finding_id)
    if not drafted.is_file():
        raise UserError(
            f"give --manifest FILE: {finding_id} has no case file in {home.cases} (`mcpipechekr generate "
            f"--finding {finding_id}` writes a manifest to fill in)"
        )
    return drafted


def _server(
    command: tuple[str, ...], url: str | None, headers: tuple[str, ...], *, needed: bool
) -> ServerConfig | None:
    """The server given after `--` or with --url, else config.yaml's in this folder; None when there is
    none and none is needed."""
    if command or url:
        return resolve_server(
            None,
            command=shlex.join(command) if command else None,
            url=url,
            headers=headers,
            base_dir=Path.cwd(),
        )
    if Path(DEFAULT_CONFIG_FILE).exists():
        return load_config(DEFAULT_CONFIG_FILE).server
    if not needed:
        return None
    raise UserError(
        "give the server: its command after `--` (`-- python server.py`) or --url, or run this in the "
        "project folder whose config.yaml names it"
    )


def _accepted_at_terminal(home: Home, finding: Finding, manifest: Path, case_id: str) -> bool:
    """Show the case and ask; True once accepted (now or before). Refused without a terminal: accepting
    is a person's decision, not a script's."""
    loaded = load_manifest(manifest)
    case = loaded.manifest.case(case_id)
    if case is None:
        raise UserError(
            f"{manifest}: no case '{case_id}' (cases: {', '.join(c.id for c in loaded.manifest.cases)})"
        )
    for line in describe_case(finding, loaded, case):
        _echo(line)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(
            "accepting a case is a person's decision: run this command at a terminal, read the case and "
            "answer y"
        )
    if not click.confirm(f"Accept this case as evidence for {finding.id}?", default=False):
        _echo(f"not accepted: runs of case '{case_id}' will not count toward closing {finding.id}")
        return False
    fresh = record_acceptance(home, finding, loaded, case)
    _echo(
        f"accepted: runs of case '{case_id}' now count for {finding.id}" + ("" if fresh else " (as before)")
    )
    return True


def _echo(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)
