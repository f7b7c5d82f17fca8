"""Argument synthesis on the shapes published servers have (tests/servers/ledger_dirs_server.py).

Each tool needs what a published server needed and synthesis first missed:
the folder the server was started with for a `*_dir` parameter although other
results named files and `/dev/null` under path-like keys (mcp-server-git's
`repo_path`); an id a listing gave under a key that does not name the parameter
(a commit for `git_diff`'s `target`); a value only the parameter's description
quotes (`git_branch`'s `branch_type`); a file below a folder of folders
(server-filesystem started on such a tree); and an open-world tool whose error
says "connection issue" (mcp-server-fetch offline), which needs the network.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types
import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.sources import harvest_result
from mcpipechekr.config import Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_synthesis_shapes")

SERVERS = Path(__file__).resolve().parent / "servers"


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    ids = [result.id for result in report.checks]
    assert len(ids) == len(set(ids)), f"duplicate check ids: {ids}"
    return {result.id: result for result in report.checks}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[CheckReport, Path]:
    folder = tmp_path_factory.mktemp("ledger")
    store = folder / "store"
    for name, text in {"2024/march.txt": "12 entries\n", "notes/todo.txt": "close march\n"}.items():
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        (store / name).write_text(text, encoding="utf-8")
    server = ServerConfig(
        name="ledger",
        command=sys.executable,
        args=[str(SERVERS / "ledger_dirs_server.py"), "--store", str(store)],
    )
    report = run_check(Config(server=server), layers=["protocol"], call_timeout_s=10, log_path=folder / "log")
    return report, store.resolve()


def test_each_published_shape_is_reached(ledger) -> None:
    report, store = ledger
    checks = by_id(report)
    assert report.coverage is not None
    reached = {entry.tool: entry for entry in report.coverage.tools if entry.status == "reached"}
    assert set(reached) == {"store_status", "snapshots", "compare", "entries", "read_note"}
    # the folder from the command line, not the file or /dev/null other results named
    assert reached["compare"].arguments["root_path"] == str(store)
    assert reached["compare"].sources["root_path"] == "server command line"
    attempted = [a["arguments"].get("root_path") for a in checks["PC-10:compare"].details["attempts"]]
    assert "/dev/null" not in attempted[:1] and "notes.txt" not in attempted[:1]
    # an id from another tool's listing, under a key that does not name the parameter
    assert reached["compare"].arguments["against"].startswith("3f9a0c1d")
    assert reached["compare"].sources["against"] == "result of snapshots"
    # a value only the description quotes
    assert reached["entries"].arguments == {"scope": "open"}
    assert reached["entries"].sources == {"scope": "parameter description"}
    # a file two levels below the store's top, which holds only folders
    note = Path(reached["read_note"].arguments["path"])
    assert store in note.parents and note.is_file()
    assert [r.id for r in report.checks if r.status in ("FAIL", "WARN")] == []


def test_a_connection_issue_on_an_open_world_tool_needs_the_network(ledger) -> None:
    report, _ = ledger
    headline = by_id(report)["PC-10:headline"]
    assert headline.status == "SKIP"
    assert headline.reason.startswith("needs network")
    assert "due to a connection issue" in headline.reason
    assert len(headline.details["attempts"]) == 1  # no second guess at a host it cannot reach


def test_a_path_at_the_end_of_a_sentence_is_taken_without_its_colon() -> None:
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="Files in /srv/ledger/2024:")]
    )
    assert [found.value for found in harvest_result("listing", result) if found.key == "path"] == [
        "/srv/ledger/2024"
    ]
