"""Fix agents: a command template per coding-agent CLI, filled in and run in the server's repository.

A built-in template is an argv list: each element is filled in on its own and
the result runs without a shell, so a prompt full of quotes, backticks and `$`
reaches the agent unchanged. `agent: shell` is the escape hatch for anything
else (a wrapper script, a pipe): the user's command line runs under
`/bin/sh -c` with every value shell-quoted before it is substituted.

Placeholders: `{prompt}` (the text), `{prompt_file}` (the same text in a file
under the run folder), `{model}` (the model part of the Phase 3 provider
string), `{provider_model}` (`provider/model`), `{repo}`, `{bug_id}`, and
`{python}` (the interpreter running MCPipeChekr).

Each run gets its own process group (`runners.cliagent.run_cli`), so on a
timeout, Ctrl-C or SIGTERM the agent and everything it started are stopped;
the loop records the group in fix.json so that a killed loop's agent is
ended by the next one (`fix.agent_group`). Output is captured
whole; what gets written is redacted with the config's secrets.

Keys: the agent runs with the process environment plus the provider variables
set in the `.env` beside config.yaml (`Config.provider_env`; an exported value
wins), so `OPENAI_API_KEY=...` in `.env` reaches opencode, codex or aider as it
reaches the Phase 1 models.

Endpoints: when providers.phase3 names an endpoint under `providers.endpoints`
(a local server, a gateway, a scripted fake in tests), the agent is pointed at
it the way the Phase 1 runners are. opencode's config file (below) declares
the endpoint as an OpenAI-compatible provider (its key referenced as
`{env:NAME}`, never written); Claude Code gets `ANTHROPIC_BASE_URL` (the URL
without `/v1`) and, when the endpoint names `api_key_env`, `ANTHROPIC_API_KEY`
from it. Other agents take their endpoint from their own settings (`agent:
shell`).

Confinement: every agent but `demo` runs in a bubblewrap sandbox
(`fix.sandbox`: writes only in the repository, no credentials, nothing
outlives the run), unless `fix.sandbox: off`. The rest is a second line
behind it (see `fix.guards` for what the loop itself undoes): every agent
runs with git's transports disabled (`guards.AGENT_GIT_ENV`). opencode always
gets a config file in the run's fix/ folder, passed with `OPENCODE_CONFIG`,
whose `permission` block denies `external_directory` (any file outside the
repository) and `git push`; `--auto` approves everything not denied. Claude
Code in print mode with `acceptEdits` refuses writes outside its working
directory, edits of git's files and shell commands without being told; codex
runs in its `workspace-write` sandbox; aider is told not to run shell commands.

The findings server: when the loop passes one (`FindingsServer`, built from
`mcpipechekr serve` for this project), it is put in the agent's MCP
configuration as `findings`, so the agent can read its bug's finding, write a
verification case and run it against the server as its work tree stands
(`verify_fix`), before it claims completion. opencode gets it in its config
file; Claude Code in an `--mcp-config` file with its tools allowed
(`--allowedTools mcp__findings__*`, since print mode cannot ask) and shown up
front (`ENABLE_TOOL_SEARCH=false`, not behind its tool search); codex through
`-c mcp_servers.findings.*` overrides. aider has no MCP client, and a `shell`
command gets nothing (it can start `mcpipechekr serve` itself). The server is
confined to the project (docs/findings.md), and its verdicts are advisory: the
loop's own tests and health check decide the commit.

The CLIs are found like the Phase 1 runners find theirs: an environment
variable naming the binary wins (`MCPIPECHEKR_OPENCODE`, `MCPIPECHEKR_CLAUDE`,
`MCPIPECHEKR_CODEX`, `MCPIPECHEKR_AIDER`), then `PATH`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import git

from mcpipechekr.config import Config, FixConfig, template_fields
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.fix.guards import AGENT_GIT_ENV
from mcpipechekr.fix.sandbox import AgentSandbox, refusals, require_sandbox
from mcpipechekr.providers import EndpointConfig, ProviderSpec
from mcpipechekr.runners.cliagent import find_cli, run_cli

DEMO_FIXER = "demo_fixer.py"
FINDINGS_SERVER = "findings"
"""The findings server's name in the agent's MCP configuration (Claude Code's tools: `mcp__findings__…`)."""


@dataclass(frozen=True)
class FindingsServer:
    """`mcpipechekr serve` for this project: the command and environment an MCP client starts it with."""

    argv: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class AgentTemplate:
    """A built-in fix agent: its argv template, how to find its CLI, and the scratch files it leaves."""

    name: str
    argv: tuple[str, ...]
    env_var: str | None = None
    install_hint: str = ""
    scratch: tuple[str, ...] = ()
    home_files: tuple[str, ...] = ()
    """Its login and settings, relative to the home: copied into the sandbox's private home for each run."""

    @property
    def needs_model(self) -> bool:
        return _names_model(*self.argv)


TEMPLATES: dict[str, AgentTemplate] = {
    template.name: template
    for template in (
        AgentTemplate(
            "opencode",
            ("opencode", "run", "--auto", "-m", "{provider_model}", "{prompt}"),
            env_var="MCPIPECHEKR_OPENCODE",
            install_hint="npm install -g opencode-ai",
            home_files=(".local/share/opencode/auth.json", ".config/opencode"),
        ),
        AgentTemplate(
            "claude-code",
            (
                "claude",
                "-p",
                "--permission-mode",
                "acceptEdits",
                "--no-session-persistence",
                "--model",
                "{model}",
                "{prompt}",
            ),
            env_var="MCPIPECHEKR_CLAUDE",
            install_hint="npm install -g @anthropic-ai/claude-code",
            home_files=(".claude.json", ".claude/.credentials.json", ".claude/settings.json"),
        ),
        AgentTemplate(
            "codex",
            ("codex", "exec", "--sandbox", "workspace-write", "--ephemeral", "-m", "{model}", "{prompt}"),
            env_var="MCPIPECHEKR_CODEX",
            install_hint="npm install -g @openai/codex",
            home_files=(".codex/auth.json", ".codex/config.toml"),
        ),
        AgentTemplate(
            "aider",
            (
                "aider",
                "--yes-always",
                "--no-auto-commits",
                "--no-dirty-commits",
                "--no-gitignore",
                "--no-check-update",
                "--no-suggest-shell-commands",
                "--message-file",
                "{prompt_file}",
                "--model",
                "{provider_model}",
            ),
            env_var="MCPIPECHEKR_AIDER",
            install_hint="python -m pip install aider-install && aider-install",
            scratch=(".aider*",),
            home_files=(".aider.conf.yml",),
        ),
        AgentTemplate("demo", ("{python}", DEMO_FIXER, "{prompt_file}")),
    )
}


@dataclass
class AgentResult:
    """How one agent run ended and what it printed."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_s: float
    refused: list[str] = field(default_factory=list)
    """What the sandbox refused or ended, as the agent's output shows it (`sandbox.refusals`)."""


@dataclass(frozen=True)
class FixAgent:
    """A resolved fix agent: ready to run on a prompt in the server's repository."""

    name: str
    repo: Path
    provider: ProviderSpec | None
    timeout_s: float
    argv: tuple[str, ...] = ()
    shell: str | None = None
    scratch: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Added to the process environment: the provider keys of `.env` (`Config.provider_env`)."""
    files: tuple[tuple[str, str], ...] = ()
    """(file name, text): config files the agent reads, written in the fix folder before each run."""
    file_env: tuple[tuple[str, str], ...] = ()
    """(environment variable, file name): variables that point the agent at one of `files`."""
    findings: bool = False
    """Whether the findings server is in the agent's MCP configuration (the prompt then says so)."""
    sandbox: AgentSandbox | None = None
    """The bubblewrap sandbox it runs in; None for `demo` and with `fix.sandbox: off`."""

    def _values(self, prompt: str, prompt_file: Path, bug_id: str) -> dict[str, str]:
        model = self.provider.model if self.provider is not None else None
        return {
            "fix_folder": str(prompt_file.parent),
            "prompt": prompt,
            "prompt_file": str(prompt_file),
            "model": model or "",
            "provider_model": str(self.provider) if self.provider is not None and model else "",
            "repo": str(self.repo),
            "bug_id": bug_id,
            "python": sys.executable,
        }

    def command(self, prompt: str, prompt_file: Path, bug_id: str) -> list[str]:
        """The argv to execute for one bug."""
        values = self._values(prompt, prompt_file, bug_id)
        if self.shell is not None:
            quoted = {key: shlex.quote(value) for key, value in values.items()}
            return ["/bin/sh", "-c", self.shell.format(**quoted)]
        return [arg.format(**values) for arg in self.argv]

    def display(self, prompt_file: Path, bug_id: str) -> str:
        """The command as a person reads it, `{prompt}` standing for the prompt text (not yet redacted)."""
        values = self._values("{prompt}", prompt_file, bug_id)
        if self.shell is not None:
            quoted = {key: shlex.quote(value) for key, value in values.items()}
            quoted["prompt"] = "{prompt}"
            return self.shell.format(**quoted)
        return shlex.join(arg.format(**values) for arg in self.argv)

    def run(
        self,
        prompt: str,
        prompt_file: Path,
        bug_id: str,
        on_start: Callable[[int], None] | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> AgentResult:
        """Run the agent once, in the repository, until it exits or `timeout_s` passes.

        `on_start` gets the agent's pid, which is its process group's id, as soon as it runs;
        `on_line` each line it prints, as it prints it.
        """
        argv = self.command(prompt, prompt_file, bug_id)
        env = {**os.environ, **self.env, **AGENT_GIT_ENV}
        for name, text in self.files:
            (prompt_file.parent / name).write_text(text, encoding="utf-8")
        for variable, name in self.file_env:
            env[variable] = str(prompt_file.parent / name)
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            pass_fds: tuple[int, ...] = ()
            if self.sandbox is not None:
                confined = stack.enter_context(self.sandbox.enter(argv, env, self.repo))
                argv, env, pass_fds = confined.command, confined.env, confined.pass_fds
            # leaving the stack waits until every process of the sandbox is gone
            result = anyio.run(
                functools.partial(
                    run_cli,
                    argv,
                    env=env,
                    cwd=self.repo,
                    stdin_text=None,
                    timeout_s=self.timeout_s,
                    on_start=on_start,
                    on_line=on_line,
                    pass_fds=pass_fds,
                )
            )
        stdout = "\n".join(result.stdout_lines)
        return AgentResult(
            exit_code=result.returncode,
            stdout=stdout,
            stderr=result.stderr,
            timed_out=result.timed_out,
            elapsed_s=time.monotonic() - started,
            refused=refusals(f"{stdout}\n{result.stderr}") if self.sandbox is not None else [],
        )


def resolve_agent(config: Config, repo: Path, findings: FindingsServer | None = None) -> FixAgent:
    """The configured fix agent, checked before anything runs; with `findings` in its MCP configuration.

    Its CLI must exist and it must have a model if its template needs one;
    otherwise a UserError names the setting to change.
    """
    fix = config.fix
    provider = config.providers.phase3
    if fix.agent == "shell":
        assert fix.command is not None  # FixConfig guarantees it
        _require_model(_names_model(fix.command), provider, "shell")
        env = config.provider_env()
        return FixAgent(
            name="shell",
            repo=repo,
            provider=None if provider.is_demo else provider,
            timeout_s=fix.timeout_s,
            shell=fix.command,
            env=env,
            sandbox=_sandbox(config, repo, env, findings=None),
        )
    template = TEMPLATES[fix.agent]
    _require_model(template.needs_model, provider, template.name)
    argv = list(template.argv)
    if template.env_var is not None:
        argv[0] = find_cli(argv[0], template.env_var, template.install_hint)
    if template.name == "demo" and not (repo / DEMO_FIXER).is_file():
        raise UserError(
            f"fix.agent `demo` runs {DEMO_FIXER} from the server's repository, and {repo} has none. "
            "It is the bundled example's stand-in for a coding agent: use it with the example (delete an "
            "old .mcpipechekr/workspace/emailindex to seed it again), or set fix.agent to a real agent."
        )
    env = config.provider_env()
    files: list[tuple[str, str]] = []
    file_env: list[tuple[str, str]] = []
    endpoint = config.providers.endpoint_for(provider) if provider.model is not None else None
    if template.name == "opencode":
        text = json.dumps(_opencode_config(provider, endpoint, findings), indent=2)
        files.append(("opencode.config.json", text))
        file_env.append(("OPENCODE_CONFIG", "opencode.config.json"))
    elif template.name == "claude-code":
        if endpoint is not None:
            env["ANTHROPIC_BASE_URL"] = re.sub(r"/v1/?$", "", endpoint.base_url.rstrip("/"))
            key = config.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
            if key:
                env["ANTHROPIC_API_KEY"] = key
        if findings is not None:
            files.append(("claude-code.mcp.json", json.dumps(_claude_mcp_config(findings), indent=2)))
            # before -p: both options take several values and would swallow the prompt after them
            argv[1:1] = [
                "--mcp-config",
                "{fix_folder}/claude-code.mcp.json",
                "--allowedTools",
                f"mcp__{FINDINGS_SERVER}__*",
            ]
            env["ENABLE_TOOL_SEARCH"] = "false"  # its four tools in view, not behind a search tool
    elif template.name == "codex" and findings is not None:
        argv[-1:-1] = _literal(_codex_overrides(findings))
    serves = findings is not None and template.name in ("opencode", "claude-code", "codex")
    return FixAgent(
        name=template.name,
        repo=repo,
        provider=provider if template.needs_model else None,
        timeout_s=fix.timeout_s,
        argv=tuple(argv),
        scratch=template.scratch,
        env=env,
        files=tuple(files),
        file_env=tuple(file_env),
        findings=serves,
        sandbox=None
        if template.name == "demo"
        else _sandbox(config, repo, env, findings if serves else None, template.home_files),
    )


def sandbox_mode(config: Config) -> Literal["bwrap", "off", "exempt"]:
    """How the configured fix agent is confined: `bwrap`, `off` (`fix.sandbox: off`), or `exempt` (the
    `demo` fixer: the bundled example's own patches, no model)."""
    if config.fix.agent == "demo":
        return "exempt"
    return "off" if config.fix.sandbox == "off" else "bwrap"


def _sandbox(
    config: Config,
    repo: Path,
    env: dict[str, str],
    findings: FindingsServer | None,
    home_files: tuple[str, ...] = (),
) -> AgentSandbox | None:
    """The agent's sandbox, checked to work here (a SandboxUnavailable says how to install it); None
    with `fix.sandbox: off`."""
    if config.fix.sandbox == "off":
        return None
    bwrap = require_sandbox()
    writable = [repo, *_git_folders(repo)]
    if findings is not None and findings.env.get(HOME_ENV):
        writable.append(Path(findings.env[HOME_ENV]))
    keep = set(env)
    provider = config.providers.phase3
    endpoint = config.providers.endpoint_for(provider) if provider.model is not None else None
    if endpoint is not None and endpoint.api_key_env:
        keep.add(endpoint.api_key_env)
    return AgentSandbox(
        bwrap=bwrap, writable=tuple(writable), home_files=home_files, keep_env=frozenset(keep)
    )


def _git_folders(repo: Path) -> list[Path]:
    """The repository's git folder and, for a linked worktree, the common one: git writes both."""
    try:
        opened = git.Repo(repo)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        return []
    try:
        return [Path(opened.git_dir), Path(opened.common_dir)]
    finally:
        opened.close()


def _literal(args: list[str]) -> list[str]:
    """Arguments that `str.format` leaves as they are (template arguments are formatted)."""
    return [arg.replace("{", "{{").replace("}", "}}") for arg in args]


def _claude_mcp_config(findings: FindingsServer) -> dict[str, object]:
    command, *args = findings.argv
    return {"mcpServers": {FINDINGS_SERVER: {"command": command, "args": args, "env": findings.env}}}


def _codex_overrides(findings: FindingsServer) -> list[str]:
    """codex's `-c key=value` overrides (values in TOML) declaring the findings server."""
    command, *args = findings.argv
    table = ", ".join(f"{name} = {json.dumps(value)}" for name, value in sorted(findings.env.items()))
    prefix = f"mcp_servers.{FINDINGS_SERVER}"
    return [
        "-c",
        f"{prefix}.command={json.dumps(command)}",
        "-c",
        f"{prefix}.args={json.dumps(args)}",
        "-c",
        f"{prefix}.env={{{table}}}",
    ]


OPENCODE_PERMISSIONS = {
    "external_directory": "deny",
    "bash": {"*": "allow", "git push*": "deny"},
}
"""opencode's `permission` block for a fix: nothing outside the repository, no push; the rest `--auto`."""


def _opencode_config(
    provider: ProviderSpec, endpoint: EndpointConfig | None, findings: FindingsServer | None = None
) -> dict[str, object]:
    """opencode's config for a fix: the permissions, the findings server, and an endpoint as an
    OpenAI-compatible provider.

    The endpoint's key is named (`{env:NAME}`), never written.
    """
    config: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "permission": OPENCODE_PERMISSIONS,
    }
    if findings is not None:
        config["mcp"] = {
            FINDINGS_SERVER: {
                "type": "local",
                "command": list(findings.argv),
                "environment": findings.env,
                "enabled": True,
            }
        }
    if endpoint is None:
        return config
    assert provider.model is not None  # resolve_agent asks only with a model
    options: dict[str, str] = {"baseURL": endpoint.base_url}
    if endpoint.api_key_env:
        options["apiKey"] = "{env:" + endpoint.api_key_env + "}"
    return {
        **config,
        "provider": {
            provider.provider: {
                "npm": "@ai-sdk/openai-compatible",
                "name": provider.provider,
                "options": options,
                "models": {provider.model: {"name": provider.model}},
            }
        },
    }


def uses_model(fix: FixConfig) -> bool:
    """Whether the configured fix agent's command names the Phase 3 model (`{model}`, `{provider_model}`)."""
    if fix.command is not None:
        return _names_model(fix.command)
    template = TEMPLATES.get(fix.agent)
    return template is not None and template.needs_model


def _names_model(*templates: str) -> bool:
    """Whether any of these templates has a `{model}` or `{provider_model}` field to fill in."""
    return any(name in ("model", "provider_model") for text in templates for name in template_fields(text))


def _require_model(needs_model: bool, provider: ProviderSpec, agent: str) -> None:
    if needs_model and provider.model is None:
        raise UserError(
            f"fix.agent `{agent}` needs a model, and providers.phase3 is `{provider}`. Set providers.phase3 "
            "to provider/model (e.g. anthropic/claude-sonnet-4-6) or pass --phase3-provider."
        )
