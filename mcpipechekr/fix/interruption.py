"""A fix stopped part-way leaves no mess: the agent ended, its edits kept as a patch, the work tree clean.

A fix can stop in three ways while an agent works on a bug:

- **Ctrl-C, or SIGTERM** (`sigterm_as_ctrl_c` makes it the same thing):
  `run_cli` stops the agent's whole process group as the KeyboardInterrupt
  unwinds, the loop saves the agent's uncommitted edits as
  `fix/interrupted-<bug id>.patch` and restores the work tree to the last
  commit (`shelve_edits`), records the bug `interrupted` in fix.json, prints
  one line saying what was kept (`interrupted_line`) and lets the interrupt
  go on: `mcpipechekr fix` exits 130.
- **a crash** of the loop itself: the same, without the line.
- **SIGKILL** (or the machine going down): nothing of ours runs. fix.json
  still names the bug in progress, the work tree it started from and the
  agent's process group, and the next fix loop of the project, on any run,
  starts by ending that group if it still runs and shelving its edits the
  same way (`clean_killed_fixes`), before it checks that the work tree is
  clean. So does the start of `doit loop`, before it traces a server that
  would otherwise still hold the killed agent's edits.

Either way the next `mcpipechekr fix` on the run goes on where the last one
stopped: bugs already committed are not redone, and the interrupted bug is
tried afresh (its patch is named in the new attempt's `earlier_patches`).

Limits: after a SIGKILL, git's control files the agent changed cannot be put
back (their copies were in the killed process's memory), and an untracked
file that existed before the bug and that the agent rewrote has no copy to
restore; it is left as the agent left it. The killed agent runs on until the
next fix loop on that run (`fix.agent_group` says why there is no
parent-death signal).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import git
from rich.console import Console

from mcpipechekr._util.console import console as default_console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir, list_runs, write_model
from mcpipechekr.artifacts.fix_record import BugFix, FixRecord, read_fix_record
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.fix.agent_group import end_leftover
from mcpipechekr.fix.agents import TEMPLATES
from mcpipechekr.fix.changes import (
    Baseline,
    Exclusions,
    changed_files,
    fold_agent_commits,
    head_sha,
    is_ancestor,
    open_repo,
    restore,
    save_patch,
)

FIX_FOLDER = "fix"
"""Prompts, agent logs and interrupted fixes' patches live in runs/{run-id}/fix/, outside the repository."""


def fix_exclusions(config: Config, repo_root: Path, run_dir: RunDir) -> Exclusions:
    """What never counts as the agent's change: the agent's scratch files, `fix.exclude`, our folders."""
    template = TEMPLATES.get(config.fix.agent)
    return Exclusions.build(
        repo_root,
        [*(template.scratch if template is not None else ()), *config.fix.exclude],
        [config.paths.runs, config.paths.home, run_dir.root],
    )


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While the body runs, SIGTERM does what Ctrl-C does: the same clean stop, not a sudden death.

    The handler calls whatever handles SIGINT at that moment: inside `anyio.run`
    that is asyncio's, which cancels the running agent so that `run_cli` stops
    its group; elsewhere Python's, which raises KeyboardInterrupt. Signal
    handlers can only be set from the main thread; elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _patch_path(folder: Path, bug_id: str) -> Path:
    """fix/interrupted-<bug id>.patch, numbered when an earlier interruption of the bug left one."""
    path = folder / f"interrupted-{bug_id}.patch"
    number = 1
    while path.exists():
        number += 1
        path = folder / f"interrupted-{bug_id}-{number}.patch"
    return path


def shelve_edits(
    repo: git.Repo, baseline: Baseline, exclusions: Exclusions, folder: Path, bug_id: str
) -> Path | None:
    """Save what the agent changed since `baseline` as a patch in `folder`, then restore the work tree.

    Commits the agent made itself are folded in first (only when `baseline`
    is still an ancestor of HEAD: a HEAD moved elsewhere is not ours to
    reset). Returns the patch, or None when there was nothing to save.
    """
    if head_sha(repo) != baseline.commit and is_ancestor(repo, baseline.commit):
        fold_agent_commits(repo, baseline)
    changes = changed_files(repo, baseline, exclusions)
    patch = save_patch(repo, baseline, changes, _patch_path(folder, bug_id))
    restore(repo, baseline, changes)
    return patch


def clean_leftover(
    repo: git.Repo, run_dir: RunDir, record: FixRecord, exclusions: Exclusions, folder: Path
) -> BugFix:
    """After a killed fix loop: end its agent, shelve its edits; the bug's entry, `interrupted`.

    `record` is the killed loop's fix.json, whose `in_progress` is set; it is
    updated (the entry appended, `in_progress` cleared) for the caller to write.
    """
    progress = record.in_progress
    assert progress is not None
    ended = progress.agent is not None and end_leftover(progress.agent)
    baseline = Baseline(commit=progress.base_commit, untracked=dict(progress.untracked))
    patch = shelve_edits(repo, baseline, exclusions, folder, progress.bug_id)
    reason = "the fix loop was killed while working on it"
    if ended:
        assert progress.agent is not None
        reason += f"; its agent (process group {progress.agent.pgid}) was still running and was ended"
    entry = BugFix(
        bug_id=progress.bug_id,
        status="interrupted",
        iterations=0,
        reason=reason,
        patch=patch.relative_to(run_dir.root).as_posix() if patch is not None else None,
    )
    record.bugs.append(entry)
    record.in_progress = None
    return entry


def clean_killed_fixes(
    config: Config, also: Iterable[RunDir] = (), out: Console | None = None
) -> list[BugFix]:
    """Clean up after every fix loop of the project that was killed mid-bug; one entry per bug.

    Looks at each run under `paths.runs` (and the runs in `also`, for a run
    folder kept elsewhere) whose fix.json names a bug in progress: ends its
    agent, shelves its edits in the repository the loop worked on, records the
    bug `interrupted` there and says so. Another run's unreadable fix.json is
    not this loop's business and is passed over.
    """
    printer = out or default_console
    cleaned: list[BugFix] = []
    seen: set[Path] = set()
    also = list(also)
    for run_dir in [*list_runs(config.paths.runs), *also]:
        if run_dir.root.resolve() in seen or not run_dir.fix_record.exists():
            continue
        seen.add(run_dir.root.resolve())
        try:
            record = read_fix_record(run_dir.fix_record)
        except UserError:
            if run_dir in also:
                raise
            continue
        if record.in_progress is None:
            continue
        repo = open_repo(record.repo)
        try:
            exclusions = fix_exclusions(config, Path(repo.working_dir), run_dir)
            entry = clean_leftover(repo, run_dir, record, exclusions, run_dir.root / FIX_FOLDER)
        finally:
            repo.close()
        write_model(run_dir.fix_record, record)
        kept = (
            f"its edits were saved to {display_path(run_dir.root / entry.patch)} and the work tree restored"
            if entry.patch is not None
            else "it had left no edits"
        )
        printer.print(f"{run_dir.run_id}: {entry.bug_id}: {entry.reason}; {kept}", markup=False)
        cleaned.append(entry)
    return cleaned


def interrupted_line(record: FixRecord, run_dir: RunDir) -> str:
    """The one line Ctrl-C prints: what is committed, where the edits went, how to go on."""
    committed = len(record.commits)
    line = f"interrupted: {committed} bug{'' if committed == 1 else 's'} fixed and committed"
    last = record.bugs[-1] if record.bugs else None
    if last is not None and last.status == "interrupted":
        if last.patch is not None:
            line += f", edits for {last.bug_id} saved to {display_path(run_dir.root / last.patch)}"
        else:
            line += f", {last.bug_id} had no edits to keep"
    return line + f"; `mcpipechekr fix {run_dir.run_id}` goes on with the rest"
