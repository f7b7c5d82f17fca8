"""The findings hand-offs: what a step gives the findings home, which outlasts any one run.

- after each Phase 1 attempt, its capture journal as call records
  (`record_call_evidence`), so failures that recur across runs and real use
  are seen;
- after an evaluation, the run's bugs as findings, and a verdict on every
  finding a fix claimed (`register_and_verify`);
- after a fix commit, the claim (`claim_fixes`): the bug's finding becomes
  fix-claimed, and later runs verify it.

Each is safe to repeat: a journal already handed over is not handed over
again (`artifacts/handover.py`), event ids are derived, a report recorded
twice is a replay, and claiming the same commit again in a row changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import BugReport, RunDir
from mcpipechekr.artifacts.atomic import append_jsonl, atomic_write_text
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.artifacts.handover import Handover, read_handovers
from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.config import Config
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.server.workspace import repo_state

if TYPE_CHECKING:
    from mcpipechekr.findings.lifecycle.states import Transition


def findings_home(config: Config | None) -> Home:
    """$MCPIPECHEKR_HOME when set, else config.yaml's `paths.home` (without a config: `.mcpipechekr/`)."""
    return Home.resolve(os.environ.get(HOME_ENV) or (config.paths.home if config is not None else None))


def record_call_evidence(config: Config, run_dir: RunDir, journals: Iterable[Path]) -> None:
    """Hand Phase 1 capture journals to the findings home as call records, each journal's life once.

    A missing journal (the attempt never reached the server) is passed over,
    and so is one already in the home: the run's `handovers.jsonl` names the
    home journal each went to (`artifacts/handover.py`), written before it, so
    handing the same journals over again, after a kill cut a hand-over short
    or on a resume that repairs one, neither loses nor repeats a record.
    """
    from mcpipechekr.findings.evidence.phase1 import journal_life, records_from_journal
    from mcpipechekr.findings.evidence.records import append_records

    home = findings_home(config)
    for journal in journals:
        if not journal.exists():
            continue
        life = journal_life(sorted(read_journal(journal), key=lambda record: record.seq))
        if (journal.name, life) in handed_over(run_dir, home):
            continue
        session = f"{run_dir.run_id}/{journal.stem}"
        records = records_from_journal(journal, config.server.name, session, home=home)
        append_records(home, records, announce=partial(_note_handover, run_dir, journal.name, life))


def handed_over(run_dir: RunDir, home: Home) -> set[tuple[str, str]]:
    """(capture journal name, life) of each journal of the run whose records are in `home`."""
    return {
        (entry.journal, entry.life)
        for entry in read_handovers(run_dir)
        if (home.journals / entry.home_journal).exists()
    }


def _note_handover(run_dir: RunDir, journal: str, life: str, home_journal: str) -> None:
    """Record, durably and before the home journal is written, where a journal's records are going."""
    entry = Handover(journal=journal, life=life, home_journal=home_journal)
    append_jsonl(run_dir.handovers, entry.model_dump(mode="json"))


def register_and_verify(
    config: Config, run_dir: RunDir, report: BugReport, *, out: Console = console
) -> None:
    """Register the run's bugs as findings, then judge every followed finding by this run.

    Only what train tasks showed is handed over (`BugReport.train_view`).

    A fixed bug that is absent from this run's report is one green verification;
    present again, it is red, and a closed finding coming back is a regression.
    The outcome goes to `out` and to the end of phase2_narrative.md.
    """
    from mcpipechekr.findings.promotion.bugs import register_bug_report
    from mcpipechekr.findings.server_identity import server_key
    from mcpipechekr.findings.verification.reverify import verify_from_bug_report, verify_registered_probes

    home = findings_home(config)
    report = report.train_view()  # the fix agent reads findings: holdout tasks must not reach them
    key = server_key(config.server)
    register_bug_report(home, report, server=key)
    revision = repo_state(config.server).sha
    outcome = verify_from_bug_report(home, report, server=key, server_revision=revision).merge(
        verify_registered_probes(home, config.server, run_id=run_dir.run_id, key=key)
    )
    lines = outcome.summary_lines()
    if not lines:
        return
    for line in lines:
        out.print(line, markup=False)
    narrative = run_dir.phase2_narrative.read_text(encoding="utf-8").rstrip("\n")
    block = "\n".join(f"    {line}" for line in lines)
    atomic_write_text(
        run_dir.phase2_narrative, f"{narrative}\n\n## Findings verified by this run\n\n{block}\n"
    )


def claim_fixes(config: Config, record: FixRecord) -> list[Transition]:
    """Claim each committed fix of `record` for its bug's finding; later runs verify it, three greens
    close it."""
    from mcpipechekr.findings.server_identity import server_key
    from mcpipechekr.findings.verification.reverify import claim_bug_fix

    home = findings_home(config)
    key = server_key(config.server)
    return [
        claim_bug_fix(home, entry.bug_id, entry.commit, key)
        for entry in record.bugs
        if entry.status == "committed" and entry.commit
    ]
