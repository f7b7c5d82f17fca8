"""Each trace of an attempt, through the real capture proxy, gets call records with event ids of its own.

An attempt traced again in the same run (an edited prompt, a one-target doit
rebuild, a loop resumed after a kill) writes its capture journal anew under
the same name; its call records must not reuse the first trace's event ids.
"""

from __future__ import annotations

import sys
from pathlib import Path

from findings_sessions import converse, rpc, tool_call

from mcpipechekr.findings.evidence.phase1 import records_from_journal
from mcpipechekr.findings.home import Home

SERVERS = Path(__file__).parent / "servers"


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
