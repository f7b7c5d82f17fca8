"""The `fix` section: which coding agent fixes a bug, and the command templates it may use.

Apart from the other sections because of its placeholder language (`{prompt}`,
`{repo}`, …), which the fix step fills in and `template_fields` reads back.
"""

from __future__ import annotations

import string
from typing import Literal

from pydantic import Field, field_validator, model_validator

from mcpipechekr._util.fields import MAX_SECONDS, Count, Number, StrictModel

FixAgentName = Literal["opencode", "claude-code", "codex", "aider", "demo", "shell", "none"]
FIX_PLACEHOLDERS = ("prompt", "prompt_file", "model", "provider_model", "repo", "bug_id", "python")
"""What a fix agent command may name in braces; see docs/fix.md for each."""
TEST_PLACEHOLDERS = ("repo", "python")
"""What `fix.test_command` may name in braces: the repository and the interpreter running MCPipeChekr."""


def template_fields(template: str) -> list[str]:
    """The `{name}` placeholders of a command template (`{{`/`}}` are literal braces)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def _check_placeholders(template: str, known: tuple[str, ...]) -> None:
    """Refuse an unmatched brace or a `{name}` that nothing fills in, naming the known ones."""
    try:
        names = template_fields(template)
    except ValueError as exc:  # an unmatched brace
        raise ValueError(f"{exc}; write a literal brace as {{{{ or }}}}") from None
    unknown = sorted({name for name in names if name not in known})
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {', '.join('{' + name + '}' for name in unknown)} "
            f"(known: {', '.join('{' + name + '}' for name in known)})"
        )


class FixConfig(StrictModel):
    """Phase 3: which coding agent fixes an approved bug, and how long it may try."""

    agent: FixAgentName = Field(
        default="opencode",
        description="The fix agent: a built-in command template (opencode, claude-code, codex, aider, "
        "demo), `shell` for the command in `command`, or `none`: evaluate only, nothing is fixed.",
    )
    command: str | None = Field(
        default=None,
        description="With `agent: shell`: the command line, run by /bin/sh in the server's repository, "
        "with {prompt}, {prompt_file}, {model}, {provider_model}, {repo}, {bug_id}, {python} filled in.",
    )
    max_iterations: Count = Field(
        default=5,
        ge=1,
        le=1000,
        description="Most runs of the agent on one bug before it is recorded as unresolved.",
    )
    timeout_s: Number = Field(
        default=1800.0, gt=0, le=MAX_SECONDS, description="Wall-clock limit of one agent run."
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns (repository-relative) of files the agent may leave behind that are "
        "never committed, e.g. its own logs.",
    )
    test_command: str | list[str] | None = Field(
        default=None,
        description="The repository's own tests, run in the server's repository after the agent claims "
        "completion and before the commit: a command line (run by /bin/sh) or an argv list (run "
        "without a shell), with {repo} and {python} filled in. A failing run is never committed: its "
        "output goes back to the agent as the next run's feedback.",
    )
    test_timeout_s: Number = Field(
        default=600.0,
        gt=0,
        le=MAX_SECONDS,
        description="Wall-clock limit of one `test_command` run; past it the tests fail.",
    )
    sandbox: Literal["on", "off"] = Field(
        default="on",
        description="`on`: every fix agent but `demo` runs in a bubblewrap sandbox (writes only in the "
        "repository, no credentials, no process outlives its run); the fix refuses to start where bwrap "
        "cannot run. `off`: the agent runs unconfined, with your rights (recorded in fix.json, printed at "
        "every fix).",
    )

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must not be empty")
        _check_placeholders(value, FIX_PLACEHOLDERS)
        return value

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_switch(cls, value: object) -> object:
        """YAML reads a bare `off` and `on` as booleans; they mean the words."""
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value

    @field_validator("test_command")
    @classmethod
    def _test_command_placeholders(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None:
            return None
        parts = [value] if isinstance(value, str) else value
        if not parts or not parts[0].strip():
            raise ValueError("must not be empty")
        for part in parts:
            _check_placeholders(part, TEST_PLACEHOLDERS)
        return value

    @model_validator(mode="after")
    def _command_for_shell(self) -> FixConfig:
        if self.agent == "shell" and self.command is None:
            raise ValueError("`agent: shell` needs `command`, the command line that runs your fix agent")
        if self.agent != "shell" and self.command is not None:
            raise ValueError(
                f"`command` is only used with `agent: shell`; `{self.agent}` has a built-in command "
                "(remove `command`, or set `agent: shell`)"
            )
        return self
