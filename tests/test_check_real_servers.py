"""`check` on published MCP servers nobody here wrote: it changes none of their state and fails none.

The servers, their pinned versions, their seeded state and the snapshot of it
come from bench/real_servers.py, shared with bench/check_real_servers.py.
They are installed once into `.cache/real-servers/` (.ci/run does it; the
session fixture installs what is missing, from PyPI and npm, and fails rather
than skips when it cannot). The fetch server goes through a proxy on a closed
127.0.0.1 port, so no test reaches the internet.

For each server: seed its state in a temporary folder, snapshot it (file bytes
and mtimes; for git also refs, HEAD, status, index and reflogs), run every
layer of `check`, snapshot again: the two must be equal, and no check may FAIL.
`test_the_snapshot_sees_a_change` shows that the snapshot would catch a write,
by opting a writing tool in through a cases file. Then the protocol layer's
judgement: its WARNs are exactly those judged true (TRUE_WARNS, each with its
reason), and PC-10 reaches at least 0.8 of the read-only tools that do not
need the network with a successful call; the fetch server's tool is SKIP "needs
network".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.check.orchestrate import run_check

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import real_servers as published  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_check_real_servers")]

TRUE_WARNS: dict[str, set[str]] = {
    # The WARNs judged true, per server: none. Every published server here annotates each tool
    # with all four hints, answers the error probes (PC-20…PC-23) with isError or -32602, and
    # answers every read-only tool synthesis reaches. What used to warn was false: PC-10 calling
    # with "a" for a repository, a path or a time zone (now not reached, or reached with the
    # server's own values). A WARN appearing here is either a regression of check or a change of
    # the pinned server; judge it, then list it with the reason it is true.
    # PC-39 on the TypeScript SDK's servers is true: tools/call with {"name": 42} gets -32603
    # (internal error, the SDK's schema validation error as its message), where JSON-RPC 2.0 names
    # -32602 for invalid params; a client cannot tell its mistake from a crash by the code.
    "git": set(),
    "time": set(),
    "fetch": set(),
    "filesystem": {"PC-39"},
    "memory": {"PC-39"},
    "everything": {"PC-39"},
}
NEEDS_NETWORK = {"fetch": {"fetch"}}
"""Tools that cannot be reached offline (the fetch server goes through a proxy on a closed port)."""
COVERAGE_TARGET = 0.8


@pytest.fixture(scope="session")
def real_servers_cache() -> Path:
    """The installed servers (installing the ones missing or at another version first)."""
    return published.install()


def check_seeded(key: str, cache: Path, tmp_path: Path, **run: object) -> tuple[CheckReport, dict, dict]:
    """Seed `key`'s state, check it with every layer, and return the report and the state before and after."""
    server = published.BY_KEY[key]
    folder = tmp_path / "state"
    folder.mkdir()
    seeded = server.seed(folder)
    before = published.snapshot(seeded)
    report = run_check(server.config(cache, seeded), log_path=tmp_path / "server.stderr.log", **run)
    return report, before, published.snapshot(seeded)


@pytest.fixture(scope="module", params=[server.key for server in published.SERVERS])
def checked(
    request: pytest.FixtureRequest, real_servers_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, CheckReport, dict, dict]:
    """One published server, seeded and checked with every layer: (key, report, state before, after)."""
    key = request.param
    return key, *check_seeded(key, real_servers_cache, tmp_path_factory.mktemp(key))


def test_check_leaves_the_state_as_it_found_it(checked) -> None:
    _, report, before, after = checked
    assert after == before
    assert [(r.id, r.reason) for r in report.checks if r.status == "FAIL"] == []
    assert report.exit_code == 0
    assert report.coverage is not None
    assert any(entry.calls for entry in report.coverage.tools), "nothing was called: the test proves nothing"


def test_check_judges_a_published_server_fairly(checked) -> None:
    key, report, _, _ = checked
    assert {r.id for r in report.checks if r.status == "WARN"} == TRUE_WARNS[key]
    coverage = report.coverage
    assert coverage is not None
    offline = {entry.tool for entry in coverage.tools if entry.status == "needs_network"}
    assert offline == NEEDS_NETWORK.get(key, set())
    for tool in offline:
        skipped = next(r for r in report.checks if r.id == f"PC-10:{tool}")
        assert (skipped.status, skipped.reason.split(":")[0]) == ("SKIP", "needs network")
    reachable = coverage.callable_tools - len(offline)
    not_reached = {e.tool: e.error for e in coverage.tools if e.status not in ("reached", "needs_network")}
    assert reachable == 0 or coverage.reached / reachable >= COVERAGE_TARGET, not_reached


@pytest.mark.parametrize(
    ("key", "tool", "arguments", "changed"),
    [
        ("memory", "create_entities", {"entities": []}, "tree"),  # it rewrites its file even for nothing
        ("git", "git_create_branch", {"repo_path": "REPO", "branch_name": "probe"}, "git"),
    ],
)
def test_the_snapshot_sees_a_change(
    key: str, tool: str, arguments: dict, changed: str, real_servers_cache: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "state" / "repo"
    cases = tmp_path / "cases.yaml"
    given = {name: str(repo) if value == "REPO" else value for name, value in arguments.items()}
    cases.write_text(
        f"opt_in:\n  - tool: {tool}\n    reason: shows that the state snapshot sees a write\n"
        f"cases:\n  - id: write\n    tool: {tool}\n    arguments: {json.dumps(given)}\n",
        encoding="utf-8",
    )
    report, before, after = check_seeded(
        key, real_servers_cache, tmp_path, layers=["protocol"], cases_path=cases
    )
    assert next(r for r in report.checks if r.id == f"PC-10:{tool}").status == "PASS"
    assert after[changed] != before[changed]
