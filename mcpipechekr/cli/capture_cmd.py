"""`mcpipechekr capture -- CMD…`: the passive stdio proxy for a real MCP client's config.

Replace the server's command in the client's config with `mcpipechekr capture
-- <the command>`; every message passes unchanged, and one sanitized record per
tool call goes to a journal in the findings home (`findings/evidence/passive.py`).
Clients start servers from folders of their choosing, so `--home` (or
$MCPIPECHEKR_HOME in the config's `env`) should name the home absolutely.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mcpipechekr.capture.stdio_proxy import exit_at_once
from mcpipechekr.errors import UserError
from mcpipechekr.findings.evidence.passive import run_passive_capture
from mcpipechekr.findings.home import Home


@click.command(
    "capture",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--home",
    "home_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Findings home for the journal [default: $MCPIPECHEKR_HOME, else .mcpipechekr/ here].",
)
@click.option(
    "--server",
    "server_name",
    metavar="NAME",
    help="Server name in the records [default: the name the server gives itself].",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
def capture_command(home_dir: Path | None, server_name: str | None, command: tuple[str, ...]) -> None:
    """Run an MCP stdio server behind a proxy that records each tool call, sanitized.

    Messages are forwarded byte for byte. Each tool call becomes one record:
    tool, argument keys and types (never values), outcome, error code, a
    salted id of the error message (never its text), latency and sizes.
    Stdout carries only the MCP traffic; the server's stderr is passed
    through. Exits with the server's code when it dies, 0 when the client
    closes the connection, 127 when the command cannot be started.
    """
    argv = list(command)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UserError(
            "capture: give the server's command after `--`, e.g. `mcpipechekr capture -- python server.py`."
        )
    home = Home.resolve(home_dir)
    try:
        code = run_passive_capture(argv, home, server=server_name)
    except OSError as exc:
        raise UserError(
            f"capture: cannot record calls under {home.root}: {exc.strerror or exc}. "
            "Give a writable folder with --home or $MCPIPECHEKR_HOME."
        ) from None
    if sys.stdin is sys.__stdin__:  # a real process, not a test's in-process invocation
        exit_at_once(code)
    raise SystemExit(code)
