"""`mcpipechekr validate`: check config.yaml and tasks.yaml before anything runs (or costs money)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import mcp_types

from mcpipechekr._util.yamlsrc import ConfigFileError, Loc, Problem, display_path, unique_problems
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_options,
    server_options,
    tasks_file,
)
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.preflight import PreflightProblem, preflight_problems
from mcpipechekr.tasks import TaskFile, load_tasks


@click.command("validate")
@config_options
@server_options
@provider_options
@click.option("--offline", is_flag=True, help="Do not start or contact the server; check the files only.")
@click.pass_context
def validate_command(ctx: click.Context, offline: bool, **_: object) -> None:
    """Check config.yaml and tasks.yaml, reporting every problem as FILE:LINE: message.

    Both files are checked against their schemas; provider strings must name a
    known provider; task ids must be unique. Then what would stop a later step:
    a real model whose API key is neither exported nor in the .env beside
    config.yaml; a server command or `start` whose script is not in the folder
    it runs in (its `cwd`, else the current folder) or whose program is not on
    PATH; and, once the fix step is set up (fix.agent `demo`, or a Phase 3
    model), a server.repo for it to commit in. What may still work (an agent
    CLI with a login of its own, a fix agent not installed here) is a warning.
    Then, unless --offline, the server
    is started (or contacted) once, from its workspace copy of `repo_template`
    when one is configured (created if missing), and every tool named by a task's
    `expected_tool`, `reference_calls` or a selection case must exist on it. When
    the server cannot be reached, a warning says the tool names were not
    checked, and validation still passes on the files alone. A deterministic
    task whose answers could not be checked (no expected_result and nothing
    structured to derive one from, or a baseline entry that names nothing) is
    a warning, and so is a reference call to a tool the server does not
    annotate read-only in a task without `allow_writes: true` (the baseline
    refuses to run it).

    The server-selection flags and --phaseN-provider override config.yaml,
    as in every command, and their values are checked too.

    Prints `ok: config.yaml, tasks.yaml (N tasks)` and exits 0 when all is
    well; otherwise prints each problem on stderr and exits 2.
    """
    problems: list[Problem] = []
    config: Config | None = None
    taskfile: TaskFile | None = None
    try:
        config = effective_config(ctx)
    except ConfigFileError as exc:
        problems.extend(exc.problems)
    tasks_path = tasks_file(ctx.params, config)
    try:
        taskfile = load_tasks(tasks_path)
    except ConfigFileError as exc:
        problems.extend(exc.problems)

    warnings: list[PreflightProblem] = []
    if config is not None:
        for item in preflight_problems(config):
            if item.severity == "error":
                problems.append(item.problem)
            else:
                warnings.append(item)
    for warning in warnings:
        click.echo(str(warning), err=True)

    tools: list[mcp_types.Tool] = []
    if not problems and config is not None and taskfile is not None and not offline:
        tool_problems, tools = _check_tool_names(config, taskfile)
        problems.extend(tool_problems)

    if problems:
        for problem in unique_problems(problems):  # config.yaml and tasks.yaml may share a bad .env
            click.echo(str(problem), err=True)
        ctx.exit(2)
    assert taskfile is not None
    if config is not None:
        from mcpipechekr.baseline import correctness_warnings, read_baseline, write_call_problems

        try:
            baseline = read_baseline(config)
        except UserError:  # a broken baseline is the baseline step's to report
            baseline = None
        for warning in correctness_warnings(taskfile, baseline):
            click.echo(f"warning: {warning}", err=True)
        for refused in write_call_problems(taskfile, taskfile.tasks, tools, config.check.read_only):
            click.echo(f"warning: {refused}", err=True)
    config_shown = display_path(config.source) if config and config.source else "(no config file)"
    count = len(taskfile.tasks)
    click.echo(f"ok: {config_shown}, {display_path(tasks_path)} ({count} task{'' if count == 1 else 's'})")


def _named_tools(taskfile: TaskFile) -> Iterator[tuple[Loc, str]]:
    """Every tool name the task file mentions, with where it is mentioned."""
    for index, task in enumerate(taskfile.tasks):
        if task.expected_tool:
            yield ("tasks", index, "expected_tool"), task.expected_tool
        for call_index, call in enumerate(task.reference_calls):
            yield ("tasks", index, "reference_calls", call_index, "tool"), call.tool
    for index, case in enumerate(taskfile.selection_cases):
        yield ("selection_cases", index, "expected_tool"), case.expected_tool


def _check_tool_names(config: Config, taskfile: TaskFile) -> tuple[list[Problem], list[mcp_types.Tool]]:
    """Problems with the tool names the task file mentions, and the server's tools (empty when it was
    not reached or nothing is named)."""
    named = list(_named_tools(taskfile))
    if not named:
        return [], []
    from mcpipechekr.server.lifecycle import fetch_tools
    from mcpipechekr.server.workspace import prepare_repo

    try:
        if config.server.repo_template:  # the server runs from a copy of the template: make sure it exists
            prepare_repo(config.server)
        tools = fetch_tools(config.server, timeout_s=config.server.health.timeout_s, redactor=config.redactor)
    except UserError as exc:  # ServerHalt included
        first_line = exc.message.strip().splitlines()[0] if exc.message.strip() else "no answer"
        click.echo(
            f"warning: server '{config.server.name}' not reachable, tool names not checked: {first_line}",
            err=True,
        )
        return [], []
    available = [tool.name for tool in tools]
    known = ", ".join(sorted(available)) or "none"
    problems = [
        taskfile.problem(loc, f"the server has no tool '{tool}' (tools: {known})")
        for loc, tool in named
        if tool not in available
    ]
    return problems, tools
