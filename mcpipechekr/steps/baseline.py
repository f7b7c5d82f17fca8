"""Phase 0, `baseline`: the accepted answer of each task → runs/baseline.json, outside any run.

Explicit (`doit baseline`, `mcpipechekr baseline`), and by `doit loop` before it
evaluates a run of a changed server. Only tasks without an entry and stale
entries (made against other tool definitions) are baselined, unless asked to
regenerate. A task whose reference calls or agent failed is written with score
0 and reported as a problem.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.baseline import BaselineOutcome, build_baseline
from mcpipechekr.config import Config
from mcpipechekr.steps.stage import announce_project


def baseline_step(
    config: Config,
    *,
    task_ids: Sequence[str] = (),
    tags: Sequence[str] = (),
    regenerate: bool = False,
    out: Console = console,
) -> BaselineOutcome:
    """Baseline the selected tasks; a line per task and the outcome go to `out`. Its `problems` say
    which tasks failed (the caller decides the exit status)."""
    announce_project(config, out)
    outcome = build_baseline(config, task_ids=task_ids, tags=tags, regenerate=regenerate)
    for task_id in outcome.kept:
        out.print(f"kept       {task_id}", markup=False)
    for task_id in outcome.stale:
        out.print(
            f"stale      {task_id}: made against other tool definitions than the server's now; rebuilt",
            markup=False,
        )
    if outcome.baseline is not None:
        for task_id in outcome.baselined:
            entry = outcome.baseline.entry(task_id)
            assert entry is not None
            reason = f": {entry.plausibility_reason}" if entry.plausibility_reason else ""
            out.print(
                f"baselined  {task_id}: {entry.method}, plausibility {entry.plausibility_score:.2f} "
                f"({entry.evaluator}{reason}), {entry.calls} call(s)",
                markup=False,
            )
            for warning in entry.warnings:
                out.print(f"warning: {task_id}: {warning}", markup=False)
            if task_id in outcome.notes:
                out.print(f"           {outcome.notes[task_id]}", markup=False)
    for problem in outcome.problems:
        out.print(f"warning: {problem}", markup=False)
    where = display_path(outcome.path)
    if outcome.written:
        rebuilt = f" ({len(outcome.stale)} stale rebuilt)" if outcome.stale else ""
        out.print(
            f"baseline: {len(outcome.baselined)} task(s) baselined{rebuilt}, {len(outcome.kept)} kept "
            f"→ {where}",
            markup=False,
        )
    else:
        out.print(f"baseline: unchanged: {where} ({len(outcome.kept)} task(s) kept)", markup=False)
    return outcome
