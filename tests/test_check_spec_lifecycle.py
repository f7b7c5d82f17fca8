"""PC-30…PC-42 against real servers: a hand-written one with the protocol defects, and SDK servers
that keep the rules (over stdio and streamable HTTP), each checked once per module."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.report import render
from mcpipechekr.check.spec_lifecycle import LIFECYCLE_CHECKS
from mcpipechekr.config import Config, LaunchSpec, ServerConfig

SERVERS = Path(__file__).resolve().parent / "servers"
OURS = set(LIFECYCLE_CHECKS)


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    return {result.id: result for result in report.checks}


def check(script: str, tmp: Path, *args: str) -> CheckReport:
    server = ServerConfig(name=Path(script).stem, command=sys.executable, args=[str(SERVERS / script), *args])
    return run_check(
        Config(server=server), layers=["protocol"], call_timeout_s=5, log_path=tmp / "server.log"
    )


@pytest.fixture(scope="module")
def defects(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    return check("spec_defects_server.py", tmp_path_factory.mktemp("defects"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    return check("tiny_server.py", tmp_path_factory.mktemp("tiny"))


def test_each_defect_gets_a_fail_or_warn_from_its_check(defects: CheckReport) -> None:
    checks = by_id(defects)
    expected = {
        "PC-30": "FAIL",  # echoes 1999-01-01
        "PC-34": "FAIL",  # refuses ping
        "PC-33": "WARN",  # ... also before initialized
        "PC-35": "WARN",  # declares logging, refuses logging/setLevel
        "PC-38": "FAIL",  # answers an unknown method with a result
        "PC-39": "FAIL",  # accepts tools/call {"name": 42}
        "PC-41": "WARN",  # answers a batch since 2025-06-18
    }
    assert {check_id: checks[check_id].status for check_id in expected} == expected
    assert "echoed '1999-01-01'" in checks["PC-30"].reason
    assert "-32601" in checks["PC-34"].reason
    assert "logging/setLevel" in checks["PC-35"].reason
    assert "with a result" in checks["PC-38"].reason
    assert "{'name': 42" in checks["PC-39"].reason
    assert "removed batches" in checks["PC-41"].reason
    # what it gets right passes
    for check_id in ("PC-31", "PC-32", "PC-37", "PC-40", "PC-42"):
        assert checks[check_id].status == "PASS", checks[check_id]
    assert checks["PC-36"].status == "SKIP"  # echo reports no progress
    assert [r.id for r in defects.checks if r.id in OURS] == list(LIFECYCLE_CHECKS)  # each once, in order


def test_all_eight_defects_of_the_server_are_found(defects: CheckReport) -> None:
    """The whole protocol layer on the eight defects: none of them passed unseen before PC-30."""
    checks = by_id(defects)
    found = {
        "version echoed": checks["PC-30"],
        "ping refused": checks["PC-34"],
        "logging declared, setLevel refused": checks["PC-35"],
        "completion without `completion`": checks["PC-50"],
        "prompt without its required argument": checks["PC-53"],
        "unknown prompt": checks["PC-54"],
        "unknown method answered": checks["PC-38"],
        "params of the wrong type accepted": checks["PC-39"],
        "batch answered": checks["PC-41"],
    }
    assert {what: result.status in ("FAIL", "WARN") for what, result in found.items()} == dict.fromkeys(
        found, True
    )
    assert checks["PC-50"].status == checks["PC-53"].status == checks["PC-54"].status == "FAIL"


def test_the_ids_reach_json_and_junit(defects: CheckReport) -> None:
    assert '"id": "PC-30"' in render(defects, "json")
    junit = render(defects, "junit")
    assert 'name="PC-30 unsupported version negotiated"' in junit or "PC-30" in junit
    assert "<failure" in junit


def test_an_sdk_server_gets_no_fail_or_warn(tiny: CheckReport) -> None:
    ours = [r for r in tiny.checks if r.id in OURS]
    assert {r.id: r.status for r in ours if r.status in ("FAIL", "WARN")} == {}
    checks = by_id(tiny)
    assert checks["PC-30"].reason == "answered 2025-11-25"
    assert checks["PC-41"].reason == "ignored the batch and still answers"
    assert checks["PC-42"].reason == "ignored the line and still answers"
    assert checks["PC-35"].status == "SKIP"  # no logging declared


def test_the_raw_sessions_stderr_is_logged_beside_the_servers(tmp_path: Path) -> None:
    report = check("spec_defects_server.py", tmp_path)
    assert by_id(report)["PC-30"].status == "FAIL"
    assert sorted(path.name for path in tmp_path.glob("*.raw-*.log")) == [
        "server.raw-a.log",
        "server.raw-b.log",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_sdk_server_over_http_gets_no_fail_or_warn(tmp_path: Path) -> None:
    port = free_port()
    server = ServerConfig(
        name="tiny-http",
        url=f"http://127.0.0.1:{port}/mcp",
        start=LaunchSpec(command=sys.executable, args=[str(SERVERS / "tiny_server.py"), "--http", str(port)]),
    )
    started = time.monotonic()
    report = run_check(Config(server=server), layers=["protocol"], call_timeout_s=5, log_path=tmp_path / "l")
    ours = {r.id: (r.status, r.reason) for r in report.checks if r.id in OURS}
    assert {i: v for i, v in ours.items() if v[0] in ("FAIL", "WARN")} == {}
    assert ours["PC-30"][0] == "PASS" and ours["PC-34"][0] == "PASS"
    assert time.monotonic() - started < 60
