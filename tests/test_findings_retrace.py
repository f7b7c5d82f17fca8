"""Re-traced attempts and killed rebuilds never break the findings index.

An attempt traced again in the same run (an edited prompt, a one-target doit
rebuild, a loop resumed after a kill) is handed to the findings home a second
time: its later records must replace the earlier ones, in `index`, in
`index --rebuild` and in what `findings` reads, including homes written
before re-traced attempts had event ids of their own. A rebuild killed
outright must not leave its temporary file behind for good.

Everything here is real: Phase 1 with the demo provider on the pantry test
server, the capture proxy on the findings test server, the index in SQLite,
the commands through click, and a rebuild in a process of its own, killed
with SIGKILL.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from findings_journal import Session, write_journal
from findings_sessions import converse, rpc, tool_call
from rich.console import Console

from mcpipechekr.artifacts import create_run_dir
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.cli import main
from mcpipechekr.config import Config, load_config
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.index_db import open_index
from mcpipechekr.findings.evidence.phase1 import records_from_journal
from mcpipechekr.findings.evidence.records import CallRecord, append_records, event_id_for
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.engine import plan_attempts
from mcpipechekr.steps.trace import attempt_journal, trace_step
from mcpipechekr.tasks import load_tasks

SERVERS = Path(__file__).parent / "servers"
PANTRY = {
    "soup-time": "How long does the Red Lentil Soup take to cook?",  # two calls
    "mixed-units": "Convert 2 cups to grams.",  # one failing call
}
RETRACED = "soup-time"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def pantry_project(root: Path) -> Config:
    """A project whose server is tests/servers/pantry_server.py, with the two tasks above."""
    config = {
        "server": {"name": "pantry", "command": sys.executable, "args": [str(SERVERS / "pantry_server.py")]},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    tasks = [
        {"task_id": task, "prompt": prompt, "task_type": "open_ended"} for task, prompt in PANTRY.items()
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    return load_config(root / "config.yaml")


def journal_files(home: Home) -> list[Path]:
    return sorted(home.journals.glob("*.jsonl"))


def home_records(path: Path) -> list[CallRecord]:
    return [CallRecord.model_validate_json(line) for line in path.read_bytes().splitlines()]


def indexed(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    """Calls by session, each as (event id, seq, tool, outcome), and the failure windows."""
    with contextlib.closing(open_index(home)) as index:
        calls = index.execute("SELECT session, event_id, seq, tool, outcome FROM calls ORDER BY session, seq")
        by_session: dict[str, list[tuple[Any, ...]]] = {}
        for session, *rest in calls.fetchall():
            by_session.setdefault(session, []).append(tuple(rest))
        by_session["windows"] = index.execute("SELECT * FROM failure_windows ORDER BY event_id").fetchall()
    return by_session


def test_an_attempt_traced_again_counts_once_with_its_latest_records(tmp_path: Path, home: Home) -> None:
    config = pantry_project(tmp_path)
    tasks = load_tasks(config.paths.tasks).tasks
    demo = ProviderSpec(provider="demo")
    run = create_run_dir(config.paths.runs)
    quiet = Console(file=io.StringIO())

    def trace(task_ids: set[str]) -> None:
        attempts = plan_attempts([task for task in tasks if task.task_id in task_ids], [demo], 1)
        trace_step(config, run, attempts, out=quiet)

    trace(set(PANTRY))
    trace({RETRACED})  # traced again: the capture journal is written anew under the same name
    assert cli("index").exit_code == 0
    trace({RETRACED})  # and once more, after the index holds the second trace
    refreshed = cli("index")
    assert refreshed.exit_code == 0, refreshed.output
    assert "(incremental;" in refreshed.stdout
    assert "record(s) of 1 attempt(s) traced again replaced" in refreshed.stdout

    session = f"{run.run_id}/{RETRACED}__demo__r001"
    traces = [path for path in journal_files(home) if home_records(path)[0].session == session]
    assert len(traces) == 3 and len(journal_files(home)) == 4  # the other task was traced once
    ids = [{record.event_id for record in home_records(path)} for path in journal_files(home)]
    assert len(set().union(*ids)) == sum(map(len, ids)), "each trace's records have event ids of their own"

    latest = traces[-1]
    (attempt,) = [one for one in plan_attempts(tasks, [demo], 1) if one.task.task_id == RETRACED]
    wire = journal_tool_calls(attempt_journal(run, attempt))
    expected = [(r.event_id, r.seq, r.tool, r.outcome) for r in home_records(latest)]
    assert [call[2] for call in expected] == [call.tool for call in wire] == ["find_recipes", "recipe_card"]
    incremental = indexed(home)
    assert incremental[session] == expected  # once, the latest trace
    assert len(incremental) == 3  # the two sessions and the windows

    rebuilt = cli("index", "--rebuild")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "record(s) of 1 attempt(s) traced again replaced" in rebuilt.stdout
    assert "the index holds 3 call(s)" in rebuilt.stdout
    assert indexed(home) == incremental
    assert not rebuilt.stderr  # written this way, the traces share no event id: nothing to warn about

    promoted = cli("promote")
    assert promoted.exit_code == 0, promoted.output
    assert cli("findings").exit_code == 0


# --- each trace of an attempt, through the capture proxy -------------------------------------------

INIT = rpc(
    0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
)
CALLS = [tool_call(1, "lookup", id="1"), tool_call(2, "locked"), tool_call(3, "lookup", id="2")]
SESSION = "run-1/lookup__demo__r001"


def trace_through_the_proxy(root: Path) -> Path:
    """One trace of the attempt: its capture journal made anew (as the engine does), then the calls."""
    journal = root / "runs" / "run-1" / "journals" / "lookup__demo__r001.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.unlink(missing_ok=True)
    proxy = [sys.executable, "-m", "mcpipechekr.capture", "--journal", str(journal), "--"]
    converse([*proxy, sys.executable, str(SERVERS / "findings_raw.py")], [INIT, *CALLS])
    return journal


def test_each_trace_of_an_attempt_has_event_ids_of_its_own(tmp_path: Path, home: Home) -> None:
    journal = trace_through_the_proxy(tmp_path)
    first = records_from_journal(journal, "findings-raw", SESSION, home=home)
    assert records_from_journal(journal, "findings-raw", SESSION, home=home) == first  # converting again
    journal = trace_through_the_proxy(tmp_path)  # the same name, written anew
    second = records_from_journal(journal, "findings-raw", SESSION, home=home)
    assert [r.seq for r in first] == [r.seq for r in second] == [0, 1, 2]
    assert not {r.event_id for r in first} & {r.event_id for r in second}


# --- journals written before re-traced attempts had event ids of their own -------------------------


def test_a_home_whose_retraced_attempt_reused_event_ids_rebuilds(tmp_path: Path, home: Home) -> None:
    """Two traces of one attempt, handed over as the harness used to: ids from the attempt's name and
    the call's position only, so the same ids name the calls of both traces."""

    def trace_and_hand_over_the_old_way() -> list[CallRecord]:
        journal = trace_through_the_proxy(tmp_path)
        records = records_from_journal(journal, "findings-raw", SESSION, home=home)
        old_ids = [
            record.model_copy(update={"event_id": event_id_for(SESSION, journal.name, record.seq)})
            for record in records
        ]
        append_records(home, old_ids)
        return old_ids

    earlier = trace_and_hand_over_the_old_way()
    assert cli("index").exit_code == 0
    later = trace_and_hand_over_the_old_way()
    assert [r.event_id for r in earlier] == [r.event_id for r in later] and earlier != later

    for args, mode in ((["index"], "incremental"), (["index", "--rebuild"], "full")):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert f"({mode}" in result.stdout
        assert result.stderr.startswith("warning: ")
        assert f"reuses {len(CALLS)} event id(s) of journal" in result.stderr
        assert f"{len(CALLS)} record(s) of 1 attempt(s) traced again replaced" in result.stdout
        with contextlib.closing(open_index(home)) as index:
            rows = index.execute("SELECT event_id, at FROM calls ORDER BY seq").fetchall()
        assert rows == [(r.event_id, r.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")) for r in later]
    assert cli("findings").exit_code == 0


def test_a_replaced_trace_is_one_repeat_when_it_is_the_same_journal_again(home: Home) -> None:
    """The same journal handed over twice (a hand-off repeated after a crash) is a repeat, not a
    replacement: nothing is counted twice, nothing is reported as traced again."""
    attempt = Session(home, "run-1/task__demo__r001")
    for _ in range(3):
        attempt.ok("search", query="string")
    append_records(home, attempt.records)
    refresh_index(home)
    append_records(home, attempt.records)
    again = refresh_index(home)
    assert (again.mode, again.added, again.duplicates, again.replaced, again.calls) == (
        "incremental",
        0,
        3,
        0,
        3,
    )
    rebuilt = refresh_index(home, rebuild=True)
    assert (rebuilt.added, rebuilt.duplicates, rebuilt.replaced, rebuilt.warnings) == (3, 3, 0, [])


# --- a rebuild killed outright ---------------------------------------------------------------------

STOP_AT_THE_TEMPORARY_FILE = textwrap.dedent(
    """
    import os, signal, sys

    def stop_when_the_rebuild_reopens_its_file(event, args):
        # The rebuild reopens its temporary file to sync it once every row is in: stop there.
        if event == "open" and ".index.db.tmp-" in str(args[0]):
            os.kill(os.getpid(), signal.SIGSTOP)

    sys.addaudithook(stop_when_the_rebuild_reopens_its_file)
    from mcpipechekr.cli import main
    main(["index", "--rebuild"])
    """
)


def test_the_temporary_file_of_a_killed_rebuild_is_removed_by_the_next_index(
    tmp_path: Path, home: Home
) -> None:
    for number in range(40):
        session = Session(home, f"capture-{number:03d}")
        for seq in range(250):
            if seq % 7:
                session.ok("search", query="string")
            else:
                session.error("search", "no such note 17")
        write_journal(home, f"20260301T0000{number:02d}.000000Z-capture-1-{number:06x}", session)
    assert cli("index").exit_code == 0
    complete = indexed(home)

    env = {**os.environ, HOME_ENV: str(home.root)}
    rebuild = subprocess.Popen([sys.executable, "-c", STOP_AT_THE_TEMPORARY_FILE], cwd=tmp_path, env=env)
    try:
        _, status = os.waitpid(rebuild.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the rebuild ended before it wrote its temporary file"
        (leftover,) = home.root.glob(".index.db.tmp-*")
        assert leftover.stat().st_size > 100_000  # stopped mid-way: every row in, the indexes not yet
    finally:
        rebuild.kill()
        rebuild.wait()
    assert leftover.exists()  # killed outright, it could not clean up
    assert indexed(home) == complete  # readers still see the previous index

    result = cli("index")
    assert result.exit_code == 0, result.output
    assert "removed 1 temporary file(s) of an interrupted rebuild" in result.stdout
    assert not list(home.root.glob(".index.db.tmp-*"))
    assert indexed(home) == complete
