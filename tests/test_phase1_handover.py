"""Every traced attempt's call records reach the findings home once, whatever point a kill lands at.

Phase 1 writes an attempt's trace, then hands its capture journal to the
findings home as call records. A process killed between the two left a trace
the resumed run keeps (it does not pay for the attempt again) and records the
home never got; a resume that repairs that must not hand over twice what did
arrive. The checks are `records_handed_once` of tests/fault_invariants.py,
the soak's invariant.

Real processes: Phase 1 with the demo provider on the pantry test server, in
a child process that SIGKILLs itself at the exact point (its hand-over
replaced by the kill), then resumed in this one. The narrower window of a kill
after the hand-over is noted but before its home journal is written is made
by breaking off that write.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from fault_invariants import HOME, records_handed_once
from rich.console import Console

from mcpipechekr.artifacts import RunDir, create_run_dir
from mcpipechekr.artifacts.handover import read_handovers
from mcpipechekr.config import Config, load_config
from mcpipechekr.findings.evidence import records
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.engine import plan_attempts
from mcpipechekr.steps import trace
from mcpipechekr.steps.handoff import record_call_evidence
from mcpipechekr.steps.trace import attempt_journal, trace_step
from mcpipechekr.tasks import load_tasks

SERVERS = Path(__file__).parent / "servers"
PANTRY = {
    "soup-time": "How long does the Red Lentil Soup take to cook?",  # two calls
    "mixed-units": "Convert 2 cups to grams.",  # one failing call
}
QUIET = Console(file=io.StringIO())

KILLED_AT_HANDOVER = textwrap.dedent(
    """
    import os, signal, sys
    from mcpipechekr.artifacts import RunDir
    from mcpipechekr.config import load_config
    from mcpipechekr.providers import ProviderSpec
    from mcpipechekr.runners.engine import plan_attempts
    from mcpipechekr.steps import trace
    from mcpipechekr.tasks import load_tasks

    def killed(*_args, **_kwargs):  # the trace is written; the hand-over never comes
        os.kill(os.getpid(), signal.SIGKILL)

    trace.record_call_evidence = killed
    config = load_config("config.yaml")
    tasks = load_tasks(config.paths.tasks).tasks
    attempts = plan_attempts(tasks, [ProviderSpec(provider="demo")], 1)
    trace.trace_step(config, RunDir(__import__("pathlib").Path(sys.argv[1])), attempts, concurrency=1)
    """
)


@pytest.fixture
def pantry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """A project on tests/servers/pantry_server.py with the two tasks above; its home is `.mcpipechekr/`."""
    config = {
        "server": {"name": "pantry", "command": sys.executable, "args": [str(SERVERS / "pantry_server.py")]},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": HOME},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    tasks = [
        {"task_id": task, "prompt": prompt, "task_type": "open_ended"} for task, prompt in PANTRY.items()
    ]
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    monkeypatch.setenv(HOME_ENV, str(tmp_path / HOME))
    monkeypatch.chdir(tmp_path)
    return load_config(tmp_path / "config.yaml")


def home_journals(project: Path) -> list[Path]:
    return sorted((project / HOME / "journals").glob("*.jsonl"))


def resume(config: Config, run: RunDir) -> None:
    """Phase 1 of the run again, as a rerun of the loop does: the attempts already traced are kept."""
    attempts = plan_attempts(load_tasks(config.paths.tasks).tasks, [ProviderSpec(provider="demo")], 1)
    trace_step(config, run, attempts, resume=True, out=QUIET)


def test_a_kill_between_trace_and_hand_over_is_repaired_by_the_resume(pantry: Config, tmp_path: Path) -> None:
    run = create_run_dir(pantry.paths.runs)
    child = subprocess.run(
        [sys.executable, "-c", KILLED_AT_HANDOVER, str(run.root)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stdout + child.stderr
    (traced,) = sorted(run.traces.glob("*.json"))  # one attempt finished, the kill came before the next
    assert home_journals(tmp_path) == []
    missing = f"{traced.relative_to(tmp_path)}: 2 of 2 call record(s) not in the findings home"
    assert records_handed_once(tmp_path) == [missing]

    resume(pantry, run)
    assert len(list(run.traces.glob("*.json"))) == 2
    assert records_handed_once(tmp_path) == []
    assert len(home_journals(tmp_path)) == 2  # one per attempt: the kept trace's, the new one's

    resume(pantry, run)  # nothing left to trace or to hand over
    assert len(home_journals(tmp_path)) == 2
    assert records_handed_once(tmp_path) == []


class Killed(BaseException):
    """Stands for the kill: nothing catches it, as nothing runs after a SIGKILL."""


def test_a_hand_over_cut_short_before_its_home_journal_is_made_once(
    pantry: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = create_run_dir(pantry.paths.runs)
    attempts = plan_attempts(load_tasks(pantry.paths.tasks).tasks, [ProviderSpec(provider="demo")], 1)
    trace_step(pantry, run, attempts, out=QUIET)
    journals = [attempt_journal(run, attempt) for attempt in attempts]
    assert records_handed_once(tmp_path) == []
    record_call_evidence(pantry, run, journals)  # handing over again changes nothing
    assert len(home_journals(tmp_path)) == 2
    assert len(read_handovers(run)) == 2

    # One attempt traced again (a new life of its journal), its hand-over withheld ...
    (soup,) = [attempt for attempt in attempts if attempt.task.task_id == "soup-time"]
    journal = attempt_journal(run, soup)
    before = journal.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(trace, "record_call_evidence", lambda *_args: None)
        trace_step(pantry, run, [soup], out=QUIET)
    assert journal.read_bytes() != before
    # ... then killed between the note in handovers.jsonl and the home journal it names.
    with monkeypatch.context() as patch:
        patch.setattr(records, "atomic_write_bytes", killed)
        with pytest.raises(Killed):
            record_call_evidence(pantry, run, [journal])
    assert len(read_handovers(run)) == 3  # noted, though its home journal never appeared
    assert len(home_journals(tmp_path)) == 2
    assert records_handed_once(tmp_path) == [
        f"runs/{run.run_id}/traces/{journal.stem}.json: 2 of 2 call record(s) not in the findings home"
    ]

    record_call_evidence(pantry, run, journals)  # what the resume does
    assert records_handed_once(tmp_path) == []
    assert len(home_journals(tmp_path)) == 3
    record_call_evidence(pantry, run, journals)
    assert len(home_journals(tmp_path)) == 3
    assert len(read_handovers(run)) == 4

    last = home_journals(tmp_path)[-1]  # the check sees a journal handed over twice
    last.with_name(last.name.replace("-phase1-", "-phase1-9")).write_bytes(last.read_bytes())
    twice = "2 of 2 call record(s) in the findings home more than once"
    assert records_handed_once(tmp_path) == [f"runs/{run.run_id}/traces/{journal.stem}.json: {twice}"]


def killed(*_args: object) -> Path:
    raise Killed
