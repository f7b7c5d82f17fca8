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
by opting a writing tool in through a cases file.
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

pytestmark = pytest.mark.slow


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


@pytest.mark.parametrize("key", [server.key for server in published.SERVERS])
def test_check_leaves_the_state_as_it_found_it(key: str, real_servers_cache: Path, tmp_path: Path) -> None:
    report, before, after = check_seeded(key, real_servers_cache, tmp_path)
    assert after == before
    assert [(r.id, r.reason) for r in report.checks if r.status == "FAIL"] == []
    assert report.exit_code == 0
    called = [r for r in report.checks if r.id.startswith("PC-10:") and r.status != "SKIP"]
    assert called, "no tool was called: the state was never at risk, so the test proves nothing"


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
