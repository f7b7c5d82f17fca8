"""The flags of one doit invocation, read from its command line before the graph exists.

doit parses a task's parameters only when it runs the task, yet the flags decide
which run folder every target lives in; so they are read here, from `PARAMS`,
once per invocation, and the loop swaps in its own for its nested invocations.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from typing import Any

from mcpipechekr.config import PROVIDER_FLAGS, provider_flag
from mcpipechekr.runshard import SHARD_HELP
from mcpipechekr.steps.stage import ALLOW_INCOMPLETE_HELP

PARAMS: list[dict[str, Any]] = [
    {"name": "config", "long": "config", "default": "config.yaml", "help": "The config file."},
    {
        "name": "task_ids",
        "long": "task",
        "type": list,
        "default": [],
        "help": "Only this task; repeatable.",
    },
    {"name": "tags", "long": "tag", "type": list, "default": [], "help": "Only tasks with this tag."},
    {"name": "repeat", "long": "repeat", "type": int, "default": 1, "help": "Attempts per task (Phase 1)."},
    {
        "name": "concurrency",
        "long": "concurrency",
        "type": int,
        "default": 4,
        "help": "Phase 1 attempts at once in `loop`.",
    },
    {
        "name": "runner",
        "long": "runner",
        "default": "native",
        "help": "Phase 1 agent for real models: native (pydantic-ai), opencode or claude-code.",
    },
    {
        "name": "keep_builtin_tools",
        "long": "keep-builtin-tools",
        "type": bool,
        "default": False,
        "help": "opencode / claude-code runners: leave the agent's own tools (shell, files) on.",
    },
    {
        "name": "opencode_mode",
        "long": "opencode-mode",
        "default": "serve",
        "help": "opencode runner: serve (one `opencode serve` per trace step) or run (`opencode run` "
        "per attempt).",
    },
    {
        "name": "new_run",
        "long": "new-run",
        "type": bool,
        "default": False,
        "help": "Start a new run folder even when the inputs match the latest run.",
    },
    {"name": "shard", "long": "shard", "default": "", "help": f"`trace`: {SHARD_HELP}"},
    {
        "name": "allow_incomplete",
        "long": "allow-incomplete",
        "type": bool,
        "default": False,
        "help": f"`evaluate`, `review`, `fix`: {ALLOW_INCOMPLETE_HELP[0].lower()}{ALLOW_INCOMPLETE_HELP[1:]}",
    },
    {
        "name": "web_review",
        "long": "web-review",
        "type": bool,
        "default": False,
        "help": "`review`, `loop`: decide in the browser (a page on 127.0.0.1, its address printed) "
        "instead of at the terminal; config.yaml's `review.web: true` does the same.",
    },
    {
        "name": "review_port",
        "long": "review-port",
        "type": int,
        "default": 0,
        "help": "`review`, `loop` with the web review: the page's port on 127.0.0.1 (0: a free one).",
    },
    {
        "name": "open_review",
        "long": "open-review",
        "type": bool,
        "default": False,
        "help": "`review`, `loop` with the web review: open the page in a browser.",
    },
    {
        "name": "regenerate_baseline",
        "long": "regenerate-baseline",
        "type": bool,
        "default": False,
        "help": "`baseline`: baseline the selected tasks again, replacing their entries.",
    },
    {
        "name": "quiet",
        "long": "quiet",
        "type": bool,
        "default": False,
        "help": "No live progress display, and no line for a task found up to date.",
    },
    {
        "name": "help",
        "long": "help",
        "short": "h",
        "type": bool,
        "default": False,
        "help": "Show the task's flags and run nothing (as `doit help TASK`).",
    },
    # One per phase, from the table the click options come from too.
    *[{"name": flag.dest, "long": flag.name, "default": "", "help": flag.help} for flag in PROVIDER_FLAGS],
]
_LONG = {param["long"]: param for param in PARAMS}
_PROVIDER_PHASE = {flag.dest: flag.phase for flag in PROVIDER_FLAGS}


@dataclass(frozen=True)
class Settings:
    """The flags of this invocation, with their defaults."""

    config: str = "config.yaml"
    task_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    repeat: int = 1
    concurrency: int = 4
    runner: str = "native"
    keep_builtin_tools: bool = False
    opencode_mode: str = "serve"
    new_run: bool = False
    shard: str = ""
    allow_incomplete: bool = False
    web_review: bool = False
    review_port: int = 0
    open_review: bool = False
    regenerate_baseline: bool = False
    quiet: bool = False
    help: bool = False
    providers: tuple[tuple[str, str], ...] = ()

    def given(self) -> dict[str, Any]:
        """The flags that differ from their defaults, as the manifest records them."""
        given: dict[str, Any] = {}
        for flag in fields(self):
            value = getattr(self, flag.name)
            if flag.name not in _UNRECORDED and value != flag.default:
                given[flag.name] = list(value) if isinstance(value, tuple) else value
        given.update({provider_flag(phase).dest: value for phase, value in self.providers})
        return given


# Providers are recorded one flag per phase; regenerate_baseline concerns the baseline, allow_incomplete
# what the later steps accept, quiet and help what is printed, not the run.
_UNRECORDED = frozenset(
    {
        "providers",
        "regenerate_baseline",
        "allow_incomplete",
        "web_review",
        "review_port",
        "open_review",
        "quiet",
        "help",
    }
)


def settings_from_argv(argv: list[str]) -> Settings:
    """The known flags wherever they appear on the doit command line; anything else is doit's business.

    doit parses a task's params only when it runs the task, but these flags
    decide which run folder the graph's targets live in, so the graph needs them
    before it exists. Every flag is taken from `PARAMS`: this reader knows no
    flag of its own.
    """
    found: dict[str, Any] = {}
    providers: dict[str, str] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "-h":  # the one short flag, doit's own help flag for a task's parameters
            found["help"] = True
            continue
        if not word.startswith("--"):
            continue
        name, has_value, inline = word[2:].partition("=")
        param = _LONG.get(name)
        if param is None:
            continue
        if param.get("type") is bool:
            found[param["name"]] = True
            continue
        if not has_value:
            if index >= len(argv):
                break
            inline = argv[index]
            index += 1
        key = param["name"]
        if key in _PROVIDER_PHASE:
            providers[_PROVIDER_PHASE[key]] = inline
        elif param.get("type") is list:
            found[key] = (*found.get(key, ()), inline)
        elif param.get("type") is int:  # counts (repeat, concurrency): at least 1
            try:
                found[key] = max(1, int(inline))
            except ValueError:
                found[key] = 1  # reported by doit itself when it parses the task's parameters
        else:
            found[key] = inline
    return Settings(**found, providers=tuple(sorted(providers.items())))


# Set by `invocations` (as `flags._override`, `flags._argv`): read here, never imported by name.
_override: Settings | None = None  # set by the loop for its nested invocations
_argv: list[str] | None = None  # doit's arguments when doit runs inside another command (`run_doit`)


def doit_argv() -> list[str]:
    """The arguments of this doit invocation: doit's own command line, or those given to `run_doit`."""
    return sys.argv[1:] if _argv is None else _argv


def current_settings() -> Settings:
    return _override or settings_from_argv(doit_argv())


# Read-only commands: they plan nothing and take no lock.

_READ_ONLY_COMMANDS = {"list", "help", "info", "tabcompletion", "dumpdb"}


def _command(argv: list[str]) -> str:
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words else "run"


def _preparing() -> bool:
    """True when this invocation may change things (not `doit list`, `doit help`, `doit loop --help`, …)."""
    argv = doit_argv()
    return _command(argv) not in _READ_ONLY_COMMANDS and not settings_from_argv(argv).help
