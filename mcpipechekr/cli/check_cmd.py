"""`mcpipechekr check`: protocol compliance, functional cases and response quality, with a CI exit code."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from click.core import ParameterSource
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from mcpipechekr._util.console import console, err_console
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.check_report import LAYERS
from mcpipechekr.check.report import FORMATS, render, text_lines
from mcpipechekr.cli.common import effective_config, server_flags, server_options
from mcpipechekr.config import DEFAULT_CONFIG_FILE, Config
from mcpipechekr.server.target import ServerFlags
from mcpipechekr.steps.check import check_step

_FILE = click.Path(path_type=Path, dir_okay=False)


@click.command("check")
@click.option(
    "--config",
    "config_path",
    type=_FILE,
    default=DEFAULT_CONFIG_FILE,
    show_default=True,
    help="The config file; not needed when --command, --url or --from-mcp-json names the server.",
)
@server_options
@click.option(
    "--layer",
    "layers",
    type=click.Choice(LAYERS),
    multiple=True,
    help="Run only this layer; repeatable [default: all three].",
)
@click.option("--cases", "cases_path", type=_FILE, help="Cases file [default: config's check.cases].")
@click.option(
    "--expected-failures",
    "expected_failures_path",
    type=_FILE,
    help="YAML list of check or case ids allowed to fail, each with a reason "
    "[default: config's check.expected_failures].",
)
@click.option(
    "--timeout",
    "call_timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds allowed for each call [default: config's check.call_timeout_s].",
)
@click.option(
    "--trust-read-only",
    "trust_read_only",
    metavar="TOOL[,TOOL…]",
    multiple=True,
    help="Call this unannotated tool as if annotated readOnlyHint: true (you vouch that it only reads); "
    "repeatable or comma-separated. In a project folder it is recorded in config.yaml's check.read_only.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text for people, json (check_report.json) or junit (JUnit XML for CI).",
)
@click.option(
    "--output",
    "output_path",
    type=_FILE,
    help="Write the report here (atomically) instead of stdout; stdout then shows the text report.",
)
@click.pass_context
def check_command(
    ctx: click.Context,
    layers: tuple[str, ...],
    cases_path: Path | None,
    expected_failures_path: Path | None,
    call_timeout_s: float | None,
    trust_read_only: tuple[str, ...],
    output_format: str,
    output_path: Path | None,
    **_: object,
) -> None:
    """Check an MCP server: protocol compliance, functional cases and response sizes.

    The protocol layer works on any server with no configuration. Tools that may
    change state (annotated destructive or not read-only) are never called
    unless the cases file opts them in, or, for a tool without such
    annotations, you trust it with --trust-read-only (the report ends with the
    unannotated tools that look read-only). See docs/check.md for every check.

    Exit codes: 0 every check passed (warnings allowed); 1 a check failed, or an
    expected failure now passes (the list is stale); 2 bad input (config, cases
    or expected-failures file) or a server that cannot be started.
    """
    config = effective_config(ctx)
    flags = server_flags(ctx.params)
    if flags.given:
        config = _without_config_cases(config, cases_path, expected_failures_path)
    with _progress() as progress:
        report = check_step(
            config,
            None,
            layers=layers or LAYERS,
            cases_path=cases_path,
            expected_failures_path=expected_failures_path,
            call_timeout_s=call_timeout_s,
            progress=progress,
            trust_read_only=trust_read_only,
            record_trust=not flags.given,
        )
    rerun = config.redactor.redact(_rerun_command(ctx, flags))
    if output_path is not None:
        atomic_write_text(output_path, render(report, output_format))  # type: ignore[arg-type]
    if output_path is not None or output_format == "text":
        for line in text_lines(report, rerun=rerun):
            console.print(line, soft_wrap=True)
        if output_path is not None:
            err_console.print(f"{output_format} report written to {output_path}")
    else:
        click.echo(render(report, output_format), nl=False)  # type: ignore[arg-type]
    ctx.exit(report.exit_code)


def _without_config_cases(config: Config, cases_path: Path | None, expected_path: Path | None) -> Config:
    """The config without config.yaml's cases and expected failures: they belong to another server.

    A server named by --command, --url or --from-mcp-json is another server than
    the one config.yaml's cases were written for: running them against it gives
    false FAILs. Only --cases and --expected-failures bring cases to it.
    """
    dropped = [
        f"check.{name} ({getattr(config.check, name)})"
        for name, given in (("cases", cases_path), ("expected_failures", expected_path))
        if getattr(config.check, name) is not None and given is None
    ]
    if config.check.read_only:  # trust in another server's tools of the same name must not carry over
        dropped.append(f"check.read_only ({', '.join(config.check.read_only)})")
    if not dropped:
        return config
    err_console.print(
        f"note: {' and '.join(dropped)} of the config not used: a server flag names the server; "
        "pass --cases / --expected-failures / --trust-read-only to use them",
        markup=False,
    )
    check = config.check.model_copy(update={"cases": None, "expected_failures": None, "read_only": []})
    return config.model_copy(update={"check": check})


def _rerun_command(ctx: click.Context, flags: ServerFlags) -> str:
    """`mcpipechekr check` with this run's --config and server flags, for the command the report suggests.

    Only what picks the server and config is repeated (the trust is about that
    server); --layer, --format and the like are left to the reader.
    """
    words = ["mcpipechekr", "check"]
    if ctx.get_parameter_source("config_path") not in (None, ParameterSource.DEFAULT):
        words += ["--config", str(ctx.params["config_path"])]
    for flag, values in (
        ("--command", [flags.command] if flags.command else []),
        ("--url", [flags.url] if flags.url else []),
        ("--header", list(flags.headers)),
        ("--from-mcp-json", [str(flags.mcp_json)] if flags.mcp_json else []),
        ("--server", [flags.server_name] if flags.server_name else []),
        ("--env", list(flags.env)),
        ("--cwd", [flags.cwd] if flags.cwd else []),
    ):
        for value in values:
            words += [flag, value]
    return shlex.join(words)


@contextlib.contextmanager
def _progress() -> Iterator[Callable[[str], None] | None]:
    """A spinner with the running check on stderr, only when stderr is a terminal."""
    if not err_console.is_terminal:
        yield None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("checking", total=None)
        yield lambda text: bar.update(task, description=text)
