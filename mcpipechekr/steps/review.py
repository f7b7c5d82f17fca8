"""The review checkpoint: a person approves the bug report for the fix loop, exports it as issues, or exits.

One step for both front ends. A decision given up front (`mcpipechekr review
--approve/--export/--exit`) is recorded after the report is shown; otherwise a
person at a terminal is asked at the `review>` prompt; with neither, the report
and the commands to continue (those that fit the config's mode: export instead
of approve when fixing is off) are shown and nothing is decided. The loop meets
the checkpoint through `require_decision`, which stops it there.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.review import Review, ReviewDecision
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.review.decision import current_review, record_decision
from mcpipechekr.review.prompt import InputFn, announce_decision, review_checkpoint
from mcpipechekr.review.render import show_review
from mcpipechekr.review_web import LoopPage, active_loop_page, loop_page, serve_review
from mcpipechekr.steps.stage import coverage_note, require_traced


def review_step(
    config: Config | None,
    run_dir: RunDir,
    *,
    decision: ReviewDecision | None = None,
    annotations: Sequence[str] = (),
    bug_ids: Sequence[str] | None = None,
    interactive: bool | None = None,
    input_fn: InputFn | None = None,
    allow_incomplete: bool = False,
    out: Console = console,
) -> Review | None:
    """Record `decision`, or ask for one; returns the review in force, or None when nobody decided.

    `config` is the project's: an approval the fix step could not act on
    (fixing off, `Config.fixing_off`, or an unusable `server.repo`) is refused,
    saying what to do instead; an export's issue files are redacted with its
    secrets; the prompt and the hint offer what fits its mode. None (a run
    folder reviewed away from its project) approves unchecked. `interactive`
    defaults to whether stdin is a terminal; `input_fn` reads the prompt's
    answers (default: the console). `bug_ids` scopes an approval or an export
    (None: every server-fixable bug). A run that lacks planned traces is
    refused unless `allow_incomplete`.
    """
    coverage = require_traced(run_dir, "review", allow_incomplete=allow_incomplete)
    if coverage is not None:
        out.print(f"note: the report {coverage_note(coverage)}", markup=False)
    if decision is None:
        return review_checkpoint(run_dir, out, interactive=interactive, input_fn=input_fn, config=config)
    show_review(run_dir, out, config=config)
    review = record_decision(
        run_dir,
        decision,
        annotations,
        config=config if decision in ("approve", "export") else None,
        bug_ids=bug_ids,
        redactor=config.redactor if config is not None else None,
    )
    announce_decision(run_dir, review, out)
    return review


def web_review_step(
    config: Config | None,
    run_dir: RunDir,
    *,
    port: int = 0,
    open_browser: bool = False,
    allow_incomplete: bool = False,
    out: Console = console,
) -> Review:
    """The review in the browser: serve the page on 127.0.0.1 until the reviewer decides on it.

    The same checkpoint as `review_step`'s prompt, decided on a page instead (`review_web`): the
    coverage check first, then the decision recorded by `record_decision` as the prompt records it.
    Ctrl-C propagates with nothing recorded. Under `doit loop --web-review` the review goes on the
    loop's page (`loop_page`), whose address was printed when the loop started, rather than a new one.
    """
    coverage = require_traced(run_dir, "review", allow_incomplete=allow_incomplete)
    if coverage is not None:
        out.print(f"note: the report {coverage_note(coverage)}", markup=False)
    if (page := active_loop_page()) is not None:
        return page.review(run_dir)
    return serve_review(run_dir, out, config=config, port=port, open_browser=open_browser)


def loop_review_page(
    config: Config, *, enabled: bool, port: int = 0, open_browser: bool = False, out: Console = console
) -> AbstractContextManager[LoopPage | None]:
    """`doit loop --web-review`: one page for the whole loop, its progress between reviews (`LoopPage`).

    Entered once when the loop starts, so the reviewer opens one address and follows Phase 1 and the
    fix there; `web_review_step` then serves each review on it. Without `enabled`, None and nothing runs.
    """
    return loop_page(config, out, enabled=enabled, port=port, open_browser=open_browser)


def require_decision(
    config: Config,
    run_dir: RunDir,
    *,
    allow_incomplete: bool = False,
    web: bool = False,
    port: int = 0,
    open_browser: bool = False,
    out: Console = console,
) -> Review:
    """The checkpoint as the loop meets it: the review in force, or a UserError that stops the loop.

    With `web` (`--web-review`, `review.web`) an undecided report is decided on the review page, which
    the loop serves and waits on; a report already decided is not asked about again either way.
    """
    if web and current_review(run_dir) is None:
        return web_review_step(
            config, run_dir, port=port, open_browser=open_browser, allow_incomplete=allow_incomplete, out=out
        )
    review = review_step(config, run_dir, allow_incomplete=allow_incomplete, out=out)
    if review is None:
        raise UserError(
            f"the loop stopped at the review of {run_dir.run_id}; decide as shown above, then run "
            "`doit loop` again to go on."
        )
    return review
