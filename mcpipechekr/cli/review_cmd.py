"""`mcpipechekr review RUN`: the human checkpoint between Phase 2 and the fix loop (or the issue tracker)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

import click
from click.core import ParameterSource
from rich.text import Text

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.review import ReviewDecision
from mcpipechekr.cli.common import (
    allow_incomplete_option,
    config_options,
    effective_config,
    holding_project,
    resolve_run,
)
from mcpipechekr.config import DEFAULT_CONFIG_FILE, Config
from mcpipechekr.errors import UserError
from mcpipechekr.steps.review import review_step, web_review_step
from mcpipechekr.steps.summary import summary_step


@click.command("review")
@click.argument("run", metavar="RUN", default="latest")
@config_options
@click.option("--approve", "approve", is_flag=True, help="Approve the bug report: the fix loop may run.")
@click.option(
    "--export",
    "export",
    is_flag=True,
    help="Write the bugs as issues for the server's authors, one markdown file each in "
    "runs/<run>/issues/; nothing is fixed; writes session_summary.md.",
)
@click.option("--exit", "exit_", is_flag=True, help="Stop here: nothing is fixed; writes session_summary.md.")
@click.option(
    "--annotate",
    "annotations",
    metavar="TEXT",
    multiple=True,
    help="A note for the fix agent (and the exported issues), recorded with the decision; repeatable.",
)
@click.option(
    "--bug",
    "bug_ids",
    metavar="ID",
    multiple=True,
    help="With --approve or --export: only this bug (repeatable); the fix loop works on these alone, "
    "or only these are exported [default: every bug the server can fix].",
)
@click.option(
    "--interactive/--no-interactive",
    default=None,
    help="Ask at a `review>` prompt [default: when stdin is a terminal and no decision flag is given].",
)
@click.option(
    "--web",
    is_flag=True,
    help="Decide on a page in the browser instead of the prompt: served on 127.0.0.1 until the "
    "decision (approve or exit); the address printed carries the page's key.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="With --web: the port on 127.0.0.1 (0: a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="With --web: open the page in a browser.")
@allow_incomplete_option
@click.pass_context
def review_command(
    ctx: click.Context,
    run: str,
    approve: bool,
    export: bool,
    exit_: bool,
    annotations: tuple[str, ...],
    bug_ids: tuple[str, ...],
    interactive: bool | None,
    web: bool,
    port: int,
    open_browser: bool,
    allow_incomplete: bool,
    **_: object,
) -> None:
    """Review a run's bug report and decide: approve the fix loop, export the bugs as issues, or exit.

    RUN is a run id (run-YYYYMMDD-NNN), `latest` (the default), or a run
    folder. Shows the bugs in fix order (server-fixable first, then severity,
    then highest token_cost_of_gap; agent-behaviour bugs marked, never sent
    to the fixer) and the Phase 2 narrative, then records the decision in review.json with the
    hash of the bug report it was made on and the ids of the bugs approved
    (all the server-fixable ones, or those given with --bug); `mcpipechekr
    fix` works on those alone, and only while that report is unchanged.
    review.json is sealed: one written or edited by hand approves nothing.

    --export writes the same bugs (agent-behaviour bugs never) as issues for
    the server's authors, one markdown file each in runs/<run>/issues/ (title,
    type, severity, tool, trigger, evidence, token cost, what done looks
    like, the annotations), prints the folder and ends the session: nothing
    is fixed. It is how a server installed from a package, or a project with
    fix.agent: none, ends its review.

    At the `review>` prompt: `approve`, `annotate <text>` (a note for the fix
    agent and the issues; asks again), `export`, or `exit`; with fixing off
    (no server.repo, or fix.agent: none) `approve` is refused, saying why.
    End of input counts as exit. Nothing is ever approved by default: with
    no decision flag and no terminal, the summary and the commands to
    continue are printed and the exit code is 2.

    An approval is refused, with nothing recorded, while fixing is off or
    config.yaml gives the fix step no repository to commit in (server.repo).
    A run folder reviewed where there is no config.yaml is approved unchecked.

    A run that lacks some of its planned traces is refused, naming them,
    unless --allow-incomplete.

    --web serves the review as a page on 127.0.0.1 (--port, 0 for a free
    one) and prints its address with a random token; --open opens it in a
    browser. The page shows the same summary, bugs and narrative, a box per
    bug the server can fix, evidence links that open the trace at the step,
    an annotation and Approve selected / Exit. The decision is recorded as
    the prompt records it, then the command ends; Ctrl-C stops it (130) with
    nothing recorded.

    Exits 0 once a decision is recorded, 2 when none is or for bad input.
    """
    if approve + export + exit_ > 1:
        raise UserError("--approve, --export and --exit are mutually exclusive: choose one decision.")
    run_dir = resolve_run(ctx, run)  # a run folder given as a path needs no config
    decision: ReviewDecision | None = (
        "approve" if approve else "export" if export else "exit" if exit_ else None
    )
    if bug_ids and decision not in ("approve", "export"):
        raise UserError(
            "--bug scopes an approval or an export: add --approve or --export (nothing was recorded)."
        )
    if web and (decision is not None or interactive is not None or annotations or bug_ids):
        raise UserError(
            "--web decides on the page: drop --approve/--export/--exit, --bug, --annotate and "
            "--interactive/--no-interactive (nothing was recorded)."
        )
    if not web and (open_browser or ctx.get_parameter_source("port") is not ParameterSource.DEFAULT):
        raise UserError("--port and --open serve the review page: add --web (nothing was recorded).")
    if web:
        with holding_project(ctx):
            config = _project_config(ctx)
            review = web_review_step(
                config, run_dir, port=port, open_browser=open_browser, allow_incomplete=allow_incomplete
            )
            _after(ctx, run_dir, review.decision)
        return
    if decision is not None and interactive:
        raise UserError("--interactive asks for the decision at the prompt; drop --approve/--export/--exit.")
    asking = decision is None and (interactive or (interactive is None and sys.stdin.isatty()))
    if decision is None and not asking and annotations:
        raise UserError(
            "--annotate is recorded with a decision: add --approve, --export or --exit "
            "(nothing was recorded)."
        )
    # Only a decision writes (review.json, the issues, the summary): showing the report needs no lock.
    with holding_project(ctx) if decision is not None or asking else contextlib.nullcontext():
        review = review_step(
            _project_config(ctx) if decision != "exit" else _config_for_secrets(ctx),
            run_dir,
            decision=decision,
            annotations=annotations if decision is not None else (),
            bug_ids=bug_ids or None,
            interactive=asking,
            input_fn=_prompt_with(annotations) if asking else None,
            allow_incomplete=allow_incomplete,
        )
        if review is None:
            ctx.exit(2)
        if decision is None and not asking:
            return  # a decision recorded earlier: shown, not made again
        _after(ctx, run_dir, review.decision)


def _after(ctx: click.Context, run_dir: RunDir, decision: ReviewDecision) -> None:
    """What follows a decision, from the prompt, a flag or the page alike: the next command after an
    approval, the session summary after an export or an exit."""
    if decision == "approve":
        console.print(Text(f"next: `mcpipechekr fix {run_dir.run_id}` works through the approved bugs."))
    else:
        summary_step(_project_config(ctx), [run_dir])


def _config_for_secrets(ctx: click.Context) -> Config | None:
    """The project's config for `--exit`, whose only use is the secrets to scrub from what was typed:
    an exit never fails on a config it does not otherwise need."""
    try:
        return _project_config(ctx)
    except UserError:
        return None


def _project_config(ctx: click.Context) -> Config | None:
    """The project's config: the fix step's, to check an approval against; its secrets, kept out of
    exported issues; its mode, for the prompt and the hint; the findings home's for the summary; None
    where there is none.

    A run folder may be reviewed away from its project (no config.yaml, --config
    left at its default): then there is nothing to check the approval against.
    """
    path = Path(ctx.params.get("config_path") or DEFAULT_CONFIG_FILE)
    if not path.exists() and ctx.get_parameter_source("config_path") in (None, ParameterSource.DEFAULT):
        return None
    return effective_config(ctx)


def _prompt_with(annotations: tuple[str, ...]) -> Callable[[str], str]:
    """The prompt reader, answering `annotate TEXT` for each --annotate first, as if typed."""
    queued = [f"annotate {text}" for text in annotations]

    def read(prompt: str) -> str:
        if queued:
            line = queued.pop(0)
            console.print(Text(prompt + line))
            return line
        return console.input(prompt)

    return read
