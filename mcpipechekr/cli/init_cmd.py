"""`mcpipechekr init`: write a commented config.yaml and tasks.yaml for a server, and a dodo.py.

The files are the documentation a user reads first, so they carry a comment on
every field. Secrets never land in config.yaml: header values, an mcp.json
entry's environment values and `--env` values whose name says they are secret
(`config.secret_name`) become `${NAME}` references, and their values go into a
`.env` file beside it (created private to the user; existing keys are kept).
Other `--env` values are settings (`HOME=/tmp/notes-home`) and are written as
given.

The defaults run offline on any machine with only the package installed: the
demo models, and `fix.agent: none`, so `doit baseline loop` evaluates the
server to a bug report and fixes nothing until the user names a fix agent and
its model. `server.repo` is set when the command runs a file that git tracks
in a checkout (`server/source.py`), so fixing needs no more than that.

The dodo.py only imports the installed package's graph (`mcpipechekr.dodo`),
so `doit loop` works in the folder; a dodo.py of the user's own is never
replaced. A .gitignore keeps runs, working state and .env out of git.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import click
from dotenv import set_key

from mcpipechekr._util.commands import runnable
from mcpipechekr._util.yamledit import flow_list, scalar
from mcpipechekr._util.yamlsrc import read_dotenv
from mcpipechekr.cli.common import server_flags, server_options
from mcpipechekr.config import DEFAULT_CONFIG_FILE, FixAgentName, FixConfig, ServerConfig, secret_name
from mcpipechekr.errors import UserError
from mcpipechekr.server.program import is_generic
from mcpipechekr.server.source import ServerSource, find_server_source
from mcpipechekr.server.target import parse_env_flag
from mcpipechekr.tasks import DEFAULT_TASKS_FILE, TASKS_TEMPLATE

FIX_AGENT_CHOICES = tuple(name for name in get_args(FixAgentName) if name != "shell")
"""`--fix-agent`'s choices: the built-in agents and `none` (`shell` needs its command line in config.yaml)."""
FIX_MODEL_EXAMPLE = "anthropic/claude-sonnet-4-6"


@dataclass
class InitResult:
    """What `init_project` did, for the command to say."""

    written: list[Path] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    """Names whose values went to .env, referenced from config.yaml as `${NAME}`."""
    source: ServerSource | None = None
    """The git checkout of the server's source, written as server.repo."""
    dodo_kept: bool = False
    """A dodo.py of the user's own was there and kept."""


@click.command("init")
@server_options
@click.option(
    "--dir",
    "target_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Folder to write config.yaml and tasks.yaml into (created if missing).",
)
@click.option(
    "--name", help="Short name of the server for reports [default: from mcp.json or the program it runs]."
)
@click.option(
    "--fix-agent",
    type=click.Choice(FIX_AGENT_CHOICES),
    default="none",
    show_default=True,
    help="The coding agent of the fix loop; `none` evaluates only. An agent also needs server.repo and "
    "(all but demo) a model in providers.phase3: init says what to set.",
)
@click.option("--force", is_flag=True, help="Overwrite config.yaml and tasks.yaml if they exist.")
@click.pass_context
def init_command(
    ctx: click.Context, target_dir: Path, name: str | None, fix_agent: str, force: bool, **_: object
) -> None:
    """Write config.yaml, tasks.yaml and dodo.py for the server given by --command, --url or --from-mcp-json.

    \b
    Examples:
      mcpipechekr init --command "notes-mcp --stdio" --env HOME=/tmp/notes-home
      mcpipechekr init --command "python server.py" --cwd ../notes-server
      mcpipechekr init --url http://127.0.0.1:8765/mcp --header "Authorization: Bearer $TOKEN"
      mcpipechekr init --from-mcp-json ~/.cursor/mcp.json --server github

    --env values are written into config.yaml as given, except a `${VAR}`
    reference, which stays one, and a variable whose name says it is a secret
    (API_KEY, GITHUB_TOKEN, DB_PASSWORD, ...): its value goes to .env beside
    config.yaml and config.yaml reads it as ${NAME}, as it does for header
    values and an mcp.json entry's environment. When the command runs a file
    that git tracks in a checkout, server.repo is set to it. The models are the
    offline demo ones and fixing is off (`fix.agent: none`) unless --fix-agent
    names an agent; config.yaml's fix section says how to turn it on. dodo.py
    lets `doit baseline loop` run in the folder. Existing files are left alone
    (exit 2) unless --force is given; a dodo.py of your own is never replaced.
    At a terminal, init then starts the server once, lists the tools that are
    not annotated read-only but look it, and asks which of them only read
    (all, each in turn, or none); those go to config.yaml's check.read_only.
    Then run `mcpipechekr tasks propose`, which replaces the example tasks.yaml
    with tasks drafted from the server, and `doit baseline loop`.
    """
    flags = server_flags(ctx.params)
    if not flags.given:
        raise UserError("init needs a server: give --command, --url or --from-mcp-json")
    # References stay references: config.yaml substitutes them when it is loaded.
    server = flags.resolve(None, base_dir=Path.cwd(), substitute_env=False)
    settings = {parse_env_flag(text)[0] for text in flags.env}
    result = init_project(
        target_dir, server, name=name, force=force, fix_agent=fix_agent, literal_env=settings
    )
    for path in result.written:
        click.echo(f"wrote {path}")
    if result.secrets:
        shown = ", ".join("${" + secret + "}" for secret in result.secrets)
        click.echo(f"secrets in {target_dir / '.env'}, not in config.yaml, which reads them as {shown}")
    if result.source is not None:
        repo = os.path.relpath(result.source.repo, target_dir.resolve())
        tracked = result.source.file.relative_to(result.source.repo)
        click.echo(f"server.repo: {repo}, the git checkout that tracks {tracked}")
    for line in fix_advice(fix_agent, repo_set=result.source is not None):
        click.echo(line)
    if sys.stdin.isatty() and sys.stdout.isatty():
        offer_read_only_trust(target_dir / DEFAULT_CONFIG_FILE, ask=_ask)
    click.echo(runnable(next_steps(target_dir, dodo_kept=result.dodo_kept)))


def _ask(question: str) -> str:
    try:
        return input(question)
    except EOFError:
        return ""


def offer_read_only_trust(config_path: Path, ask: Callable[[str], str]) -> list[str]:
    """Start the server once, list its unannotated read-only-looking tools, and ask whom to trust.

    Why at init: most servers annotate nothing, so without the author's word
    check, baseline and propose call none of their tools. Only at a terminal
    (the caller checks), since the answer must come from a person; the trusted
    names go to config.yaml's check.read_only. A server that cannot be started
    costs a note, not the init: `mcpipechekr check` suggests the same tools.
    """
    from mcpipechekr.check.answers import one_line
    from mcpipechekr.check.trust import ask_read_only_trust, read_only_candidates, record_read_only
    from mcpipechekr.config import load_config
    from mcpipechekr.server.lifecycle import server_under_test

    try:
        config = load_config(config_path)
        with server_under_test(config) as server:
            tools = server.list_tools()
    except UserError as exc:
        click.echo(
            f"note: not asking which tools only read, the server did not list them: {one_line(str(exc))}"
        )
        return []
    candidates = read_only_candidates(tools, trusted=config.check.read_only)
    chosen = ask_read_only_trust(candidates, ask=ask, say=click.echo)
    if chosen:
        record_read_only(config_path, chosen)
        click.echo(f"check.read_only: {', '.join(chosen)} (trusted to only read; in {config_path})")
    return chosen


def fix_advice(agent: str, *, repo_set: bool) -> list[str]:
    """What init says about the fix loop: off, or what an agent still needs before it can fix."""
    if agent == "none":
        return [
            "fixing is off (fix.agent: none): the loop evaluates the server and fixes nothing; "
            "config.yaml's fix section says how to turn it on"
        ]
    advice = []
    if uses_fix_model(agent):
        advice.append(
            f"fix.agent {agent} needs a model: set providers.phase3 in config.yaml to provider/model "
            f"(e.g. {FIX_MODEL_EXAMPLE}), its key in .env"
        )
    if not repo_set:
        advice.append(
            "server.repo is not set: until it names the git checkout of the server's source, "
            "the loop evaluates and fixes nothing"
        )
    return advice


def uses_fix_model(agent: str) -> bool:
    """Whether a built-in fix agent runs on the Phase 3 model (all but `demo` and `none`)."""
    from mcpipechekr.fix.agents import uses_model

    return agent != "none" and uses_model(FixConfig(agent=agent))  # type: ignore[arg-type]


def next_steps(target_dir: Path, *, dodo_kept: bool) -> str:
    """init's last line: the commands that take the new project to a bug report, as typed from here."""
    if target_dir.resolve() == Path.cwd().resolve():
        doit = "mcpipechekr doit baseline loop" if dodo_kept else "doit baseline loop"
        propose = "mcpipechekr tasks propose"
    else:
        folder = shlex.quote(str(target_dir))
        config = shlex.quote(str(target_dir / DEFAULT_CONFIG_FILE))
        doit = f"mcpipechekr doit --dir {folder} baseline loop"
        propose = f"mcpipechekr tasks propose --config {config}"
    return f"next: `{propose}` drafts verified tasks, then `{doit}`"


def init_project(
    target_dir: Path,
    server: ServerConfig,
    *,
    name: str | None = None,
    force: bool = False,
    fix_agent: str = "none",
    literal_env: set[str] | frozenset[str] = frozenset(),
) -> InitResult:
    """Write config.yaml, tasks.yaml (and .env entries for secrets) into `target_dir`.

    `literal_env` names the environment variables given as settings (`--env`):
    their literal values are written as given unless the name says secret;
    every other literal environment value (an mcp.json entry's) goes to .env.
    """
    config_path, tasks_path = target_dir / DEFAULT_CONFIG_FILE, target_dir / DEFAULT_TASKS_FILE
    existing = [path for path in (config_path, tasks_path) if path.exists()]
    if existing and not force:
        names = " and ".join(str(path) for path in existing)
        verb = "exists" if len(existing) == 1 else "exist"
        raise UserError(f"{names} already {verb}: pass --force to overwrite")
    target_dir.mkdir(parents=True, exist_ok=True)
    if name is None:
        name = server.name if not is_generic(server.name) else _slug(target_dir.resolve().name) or "server"

    result = InitResult(source=find_server_source(server))
    secrets: dict[str, str] = {}
    headers = {key: _reference(value, f"MCP_HEADER_{key}", secrets) for key, value in server.headers.items()}
    env = {
        key: value if key in literal_env and not secret_name(key) else _reference(value, key, secrets)
        for key, value in server.env.items()
    }
    cwd = os.path.relpath(server.cwd or Path.cwd(), target_dir.resolve()) if server.command else None
    repo = os.path.relpath(result.source.repo, target_dir.resolve()) if result.source else None
    if secrets:
        read_dotenv(target_dir / ".env")  # an unreadable .env stops init before it writes anything

    config_path.write_text(
        render_config(server, name=name, cwd=cwd, headers=headers, env=env, repo=repo, fix_agent=fix_agent),
        encoding="utf-8",
    )
    tasks_path.write_text(TASKS_TEMPLATE, encoding="utf-8")
    result.written += [config_path, tasks_path]
    dodo_path = target_dir / "dodo.py"
    if not dodo_path.exists() or dodo_path.read_text(encoding="utf-8") == DODO_TEMPLATE:
        dodo_path.write_text(DODO_TEMPLATE, encoding="utf-8")
        result.written.append(dodo_path)
    else:
        result.dodo_kept = True
        kept = f"kept {dodo_path}: it is not MCPipeChekr's; `mcpipechekr doit …` needs none"
        click.echo(runnable(kept), err=True)
    if _add_ignores(target_dir / ".gitignore"):
        result.written.append(target_dir / ".gitignore")
    if secrets:
        dotenv_path = target_dir / ".env"
        if _write_dotenv(dotenv_path, secrets):
            result.written.append(dotenv_path)
        result.secrets = list(secrets)
    return result


def _add_ignores(path: Path) -> bool:
    """Add the patterns .gitignore lacks (runs, working state, .env); True if anything was added."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [pattern for pattern in GITIGNORE_PATTERNS if pattern not in present]
    if not missing:
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    path.write_text(text + "".join(f"{pattern}\n" for pattern in missing), encoding="utf-8")
    return True


def _reference(value: str, wanted_name: str, secrets: dict[str, str]) -> str:
    """`${NAME}` for a literal value (remembered for .env); a value that already is a reference stays."""
    if "${" in value:
        return value
    name = re.sub(r"[^A-Za-z0-9_]", "_", wanted_name).upper()
    if not re.match(r"^[A-Za-z_]", name):
        name = "_" + name
    secrets[name] = value
    return "${" + name + "}"


def _write_dotenv(path: Path, secrets: dict[str, str]) -> bool:
    """Add the secrets .env lacks; a key already there keeps its value. True if anything was written."""
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    present = read_dotenv(path)
    wrote = False
    for key, value in secrets.items():
        if key in present:
            click.echo(f"kept {key} already in {path}", err=True)
            continue
        set_key(path, key, value, quote_mode="always")
        wrote = True
    return wrote


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _mapping_lines(mapping: dict[str, str], indent: str) -> list[str]:
    return [f"{indent}{scalar(key)}: {scalar(value)}" for key, value in mapping.items()]


def render_config(
    server: ServerConfig,
    *,
    name: str,
    cwd: str | None,
    headers: dict[str, str],
    env: dict[str, str],
    repo: str | None = None,
    fix_agent: str = "none",
) -> str:
    """config.yaml text with a comment on each field (secrets already replaced by references)."""
    lines = [
        "# MCPipeChekr configuration; check it with `mcpipechekr validate`.",
        "# Any value may use ${NAME} or ${NAME:-default}: taken from the environment, or from a .env file",
        "# beside this file (the environment wins). Substituted values are treated as secrets and never",
        "# written to reports. Command-line flags (--command, --url, --phase1-provider, ...) override",
        "# this file.",
        "",
        "# The MCP server under test.",
        "server:",
        f"  name: {scalar(name)}  # short name used in reports and logs",
    ]
    if server.command:
        lines += [
            "  # stdio: the command that starts the server. `python` (or `python3`) means the Python",
            "  # interpreter running mcpipechekr.",
            f"  command: {scalar(server.command)}",
            f"  args: {flow_list(server.args)}",
            "  # Working directory, relative to this file's folder.",
            f"  cwd: {scalar(cwd or '.')}",
        ]
        if env:
            lines += ["  # Extra environment variables for the server process.", "  env:"]
            lines += _mapping_lines(env, "    ")
        else:
            lines += [
                "  # env:            # extra environment variables for the server process",
                "  #   LOG_LEVEL: info",
            ]
    else:
        lines += [
            "  # Streamable HTTP endpoint of a running server.",
            f"  url: {scalar(server.url)}",
        ]
        if headers:
            lines += ["  # Headers sent with every request.", "  headers:"]
            lines += _mapping_lines(headers, "    ")
        else:
            lines += [
                "  # headers:        # sent with every request",
                "  #   Authorization: Bearer ${API_TOKEN}",
            ]
        lines += [
            "  # start: python server.py --http 8765   # optional: a command that starts the server first",
        ]
    if repo is not None:
        lines += [
            "  # The git checkout of the server's source (it tracks the file the command runs), relative to",
            "  # this file's folder; each run records its commit, and fixes are committed there.",
            f"  repo: {scalar(repo)}",
        ]
    else:
        lines += [
            "  # repo: path/to/server/repo   # the git checkout of the server's source, for the fix loop",
        ]
    lines += [
        "  # A healthy server answers tools/list with at least min_tools tools within timeout_s seconds.",
        "  health:",
        f"    timeout_s: {server.health.timeout_s:g}",
        f"    min_tools: {server.health.min_tools}",
        "",
        "# The model each phase uses: provider/model (e.g. openai/gpt-4o, anthropic/claude-sonnet-4-6),",
        "# pydantic-ai's provider:model, a name under `endpoints`, or demo (offline scripted model).",
        "providers:",
        "  phase0: demo   # baseline answers for the tasks",
        "  phase05: demo  # tool-description evaluation",
        "  phase1: demo   # the agent that runs the tasks blind",
        "  phase2: demo   # evaluating traces into bug reports",
        "  phase3: demo   # the fix loop",
        "  # OpenAI-compatible endpoints usable as providers, e.g. `phase1: local/llama3.1:8b`:",
        "  # endpoints:",
        "  #   local:",
        "  #     base_url: http://127.0.0.1:11434/v1",
        "  #     api_key_env: LOCAL_API_KEY   # optional: variable holding the key",
        "",
        "# Cut-offs for findings, fractions in [0, 1].",
        "thresholds:",
        "  tef_precision_warning: 0.7   # warn about a tool picked with lower precision than this",
        "  open_ended_divergence: 0.2   # flag open-ended answers diverging more than this from the baseline",
        "  overlap: 0.85                # report tool pairs whose descriptions overlap this much",
        "  misleading_confidence: 0.8   # confidence needed to call a tool description misleading",
        "",
        "# Wall-clock limits in seconds.",
        "timeouts:",
        "  tool_call_s: 60   # one tool call",
        "  task_s: 600       # one agent run of one task",
        "  phase_s: 3600     # one whole phase",
        "",
        "# Relative paths are taken from this file's folder.",
        "paths:",
        "  tasks: tasks.yaml     # the task file",
        "  runs: runs            # one folder per run",
        "  home: .mcpipechekr    # working state",
        "",
        "loop:",
        "  max_iterations: 3   # most evaluate-fix-verify rounds per `loop`",
        "",
        "# Phase 3: the coding agent that fixes one approved bug at a time in server.repo, committing",
        "# `fix: <bug id>` (never pushed). Templates: opencode, claude-code, codex, aider, or shell with",
        "# `command:`. The model is providers.phase3 or --phase3-provider. See docs/fix.md.",
        *_fix_comment(fix_agent, repo_set=repo is not None),
        "fix:",
        f"  agent: {fix_agent}",
        "  max_iterations: 5   # agent runs per bug before it is recorded as unresolved",
        "  timeout_s: 1800     # one agent run",
        '  # test_command: "{python} -m pytest -q"   # the repository\'s tests: must pass before a commit',
        "",
    ]
    return "\n".join(lines)


DODO_TEMPLATE = '''\
"""doit's entry point for this folder: `doit list` shows the MCPipeChekr pipeline, `doit loop` runs it."""

from mcpipechekr.dodo import *  # noqa: F403
'''
"""The dodo.py `init` writes: the graph comes from the installed package, config from this folder."""

GITIGNORE_PATTERNS = ("runs/", ".mcpipechekr/", ".env")
"""What a project keeps out of git: run artifacts, working state (doit's database, workspaces), secrets."""


def _fix_comment(agent: str, *, repo_set: bool) -> list[str]:
    """The comment above `fix:`: with `agent: none`, exactly what turns fixing on; else what is missing."""
    steps = [] if repo_set else ["set server.repo to the git checkout of the server's source"]
    if agent == "none":
        steps.append("set `agent: opencode` (or claude-code, codex, aider)")
    if agent == "none" or uses_fix_model(agent):
        steps.append(f"set providers.phase3 to the agent's model, e.g. `phase3: {FIX_MODEL_EXAMPLE}`")
    if not steps:
        return []
    lead = (
        "# `agent: none`: the loop evaluates (lint, traces, bug report, review) and fixes nothing. To fix:"
        if agent == "none"
        else "# Before this agent can fix:"
    )
    return [lead, *(f"#   - {step}" for step in steps)]
