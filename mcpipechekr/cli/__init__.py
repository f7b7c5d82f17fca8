"""The ``mcpipechekr`` command line.

Each command lives in its own module and is a thin call into the library, so the
doit graph and the CLI run the same code. New commands are registered here.
"""

from __future__ import annotations

import importlib
import signal
import sqlite3
from typing import Any

import click

from mcpipechekr import __version__
from mcpipechekr._util.private_mode import private_by_default
from mcpipechekr._util.stops import end_owned_groups
from mcpipechekr._util.tempfiles import sweep_dead_temp_folders
from mcpipechekr.errors import as_user_error

COMMANDS: dict[str, str] = {
    "init": "init_cmd:init_command",
    "validate": "validate_cmd:validate_command",
    "check": "check_cmd:check_command",
    "lint": "lint_cmd:lint_command",
    "baseline": "baseline_cmd:baseline_command",
    "run": "run_cmd:run_command",
    "merge": "merge_cmd:merge_command",
    "import": "import_cmd:import_command",
    "evaluate": "evaluate_cmd:evaluate_command",
    "review": "review_cmd:review_command",
    "fix": "fix_cmd:fix_command",
    "compare": "compare_cmd:compare_command",
    "report": "report_cmd:report_command",
    "schema": "schema_cmd:schema_command",
    "docs": "docs_cmd:docs_command",
    "server": "server_cmd:server_group",
    "capture": "capture_cmd:capture_command",
    "index": "index_cmd:index_command",
    "promote": "promote_cmd:promote_command",
    "findings": "findings_cmd:findings_command",
    "annotate": "annotate_cmd:annotate_command",
    "generate": "generate_cmd:generate_command",
    "verify": "verify_cmd:verify_command",
    "export-issues": "export_cmd:export_command",
    "serve": "serve_cmd:serve_command",
    "tasks": "tasks_cmd:tasks_group",
    "doit": "doit_cmd:doit_command",
    "loop": "doit_cmd:loop_command",
}
"""Command name -> `module:attribute` under mcpipechekr.cli; new commands are registered here."""


class LazyGroup(click.Group):
    """Imports a command's module only when that command is used.

    Why: `mcpipechekr capture` is launched by MCP clients for every session and
    `mcpipechekr serve` by coding agents; neither should pay for importing the
    agent runners, pydantic-ai and the evaluators they never use.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; Ctrl-C and a refused file operation end it as user errors (`_util.stops`).

        Why here: click itself answers Ctrl-C with "Aborted!" and exit status 1, and
        an OSError with a traceback. A second Ctrl-C while the first is reported is ignored.
        """
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, OSError, sqlite3.Error) as exc:
            error = as_user_error(exc)
            if error is None:
                raise
            if isinstance(exc, KeyboardInterrupt):
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                end_owned_groups()  # a server a worker thread started (under `mcpipechekr loop`)
            raise error from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attribute = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(f"mcpipechekr.cli.{module}"), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpipechekr")
def main() -> None:
    """Measure how LLM agents use your MCP server, and fix what costs them.

    Start with `mcpipechekr init`, check the files with `mcpipechekr validate`,
    make the baseline with `doit baseline`, then run the pipeline with `doit
    loop` (or `mcpipechekr doit baseline` and `mcpipechekr loop`, which need no
    dodo.py).

    Every command exits 2 on a problem in its input or environment (a file:line
    message, no traceback; a full disk or a folder it may not write included)
    and 130 on Ctrl-C, keeping what it wrote.
    """
    private_by_default()  # files 0600, folders 0700 (`_util/private_mode.py`)
    sweep_dead_temp_folders()  # what a killed run of ours left in the temp folder
