"""Layer 1 and `run_check` against real servers: the bundled example over stdio and HTTP, a raw
JSON-RPC server with planted defects, and a server whose tools change state.

Each server is checked once per module (a start costs about a second) and the tests read
different verdicts of the same report.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from mcpipechekr.artifacts.atomic import read_model
from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check, write_check_report
from mcpipechekr.check.protocol import CHECKS
from mcpipechekr.config import Config, LaunchSpec, ServerConfig

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_check_protocol")

SERVERS = Path(__file__).resolve().parent / "servers"
EMAILINDEX_TOOLS = ["query_email_database", "get_email", "count_emails"]


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    ids = [result.id for result in report.checks]
    assert len(ids) == len(set(ids)), f"duplicate check ids: {ids}"
    return {result.id: result for result in report.checks}


def broken_config(*args: str, **check: object) -> Config:
    server = ServerConfig(
        name="broken", command=sys.executable, args=[str(SERVERS / "broken_server.py"), *args]
    )
    return Config.model_validate({"server": server.model_dump(), "check": check})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the bundled example ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emailindex_report(emailindex_dir: Path, emailindex_db: Path, tmp_path_factory: pytest.TempPathFactory):
    server = ServerConfig(
        name="emailindex",
        command=sys.executable,
        args=["server.py"],
        cwd=str(emailindex_dir),
        env={"EMAILINDEX_DB": str(emailindex_db)},
    )
    config = Config(server=server, check={"expected_tool_count": 3, "expected_tools": EMAILINDEX_TOOLS})
    log = tmp_path_factory.mktemp("check") / "server.stderr.log"
    steps: list[str] = []
    report = run_check(config, layers=["protocol"], log_path=log, progress=steps.append)
    return report, steps


def test_example_passes_every_protocol_check(emailindex_report) -> None:
    report, _ = emailindex_report
    checks = by_id(report)
    assert [r.id for r in report.checks if r.status == "FAIL"] == []
    assert report.exit_code == 0
    assert report.layers == ["protocol"]
    assert {r.layer for r in report.checks} == {"protocol"}
    expected_pass = ["PC-01", "PC-02", "PC-04", "PC-06", "PC-07", "PC-08", "PC-20", "PC-23", "PC-24"]
    expected_pass += [f"PC-{n}:{tool}" for n in ("03", "05", "10", "11") for tool in EMAILINDEX_TOOLS]
    expected_pass += ["PC-21:get_email", "PC-22:get_email"]  # the only tool with a required argument
    assert {check_id: checks[check_id].status for check_id in expected_pass} == dict.fromkeys(
        expected_pass, "PASS"
    )
    assert "PC-21:count_emails" not in checks  # nothing required, nothing to leave out
    assert checks["PC-01"].reason.startswith("emailindex")
    assert checks["PC-01"].details["capabilities"][:1] == ["tools"]
    assert "3 tool(s) as configured" in checks["PC-06"].reason
    # the error probes got the server's own errors back, not a crash
    assert "Unknown tool" in checks["PC-20"].reason
    assert checks["PC-10:get_email"].details["arguments"] == {"email_id": 1}
    assert checks["PC-10:get_email"].duration_ms > 0
    summary = report.summary
    assert summary.total == len(report.checks)
    assert summary.passed + summary.warned + summary.skipped == summary.total


def test_every_protocol_check_has_a_documented_id(emailindex_report) -> None:
    report, steps = emailindex_report
    doc = (Path(__file__).resolve().parents[1] / "docs" / "check.md").read_text(encoding="utf-8")
    for check_id, spec in CHECKS.items():
        assert f"`{check_id}`" in doc, f"{check_id} is not documented in docs/check.md"
        assert spec.name in doc
    seen = {result.id.split(":")[0] for result in report.checks}
    assert seen == set(CHECKS)  # the example exercises every check
    assert any(step.startswith("PC-10 calling") for step in steps)  # progress was told what ran


def test_report_round_trips_through_check_report_json(emailindex_report, tmp_path: Path) -> None:
    report, _ = emailindex_report
    path = write_check_report(tmp_path, report)
    assert path == tmp_path / "check_report.json"
    assert read_model(path, CheckReport) == report


def test_example_over_streamable_http(emailindex_dir: Path, emailindex_db: Path, tmp_path: Path) -> None:
    port = free_port()
    server = ServerConfig(
        name="emailindex-http",
        url=f"http://127.0.0.1:{port}/mcp",
        start=LaunchSpec(
            command=sys.executable,
            args=["server.py", "--http", str(port)],
            cwd=str(emailindex_dir),
            env={"EMAILINDEX_DB": str(emailindex_db)},
        ),
    )
    report = run_check(Config(server=server), layers=["protocol"], log_path=tmp_path / "http.log")
    checks = by_id(report)
    assert report.target == f"http: http://127.0.0.1:{port}/mcp"
    assert [r.id for r in report.checks if r.status == "FAIL"] == []
    assert checks["PC-01"].status == "PASS"
    assert all(checks[f"PC-10:{tool}"].status == "PASS" for tool in EMAILINDEX_TOOLS)
    assert checks["PC-24"].status == "PASS"
    assert report.exit_code == 0


# --- a server with planted defects ------------------------------------------------------------------


@pytest.fixture(scope="module")
def broken_report(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    config = broken_config(expected_tools=["echo", "no_such_tool"])
    log = tmp_path_factory.mktemp("broken") / "server.stderr.log"
    return run_check(config, layers=["protocol"], call_timeout_s=1.0, log_path=log)


def test_each_defect_is_reported_by_its_check(broken_report: CheckReport) -> None:
    checks = by_id(broken_report)
    bad_schema = checks["PC-03:bad_schema"]
    assert bad_schema.status == "FAIL"
    assert "no-such-type" in bad_schema.reason and "/properties/x/type" in bad_schema.reason
    malformed = checks["PC-10:malformed"]
    assert malformed.status == "FAIL"
    assert "content.0.TextContent.text" in malformed.reason and "got 42" in malformed.reason
    hang = checks["PC-10:hang"]
    assert hang.status == "FAIL"
    assert "did not answer within 1s" in hang.reason and "'hang'" in hang.reason
    assert hang.duration_ms >= 1000
    crash = checks["PC-22:crash_on_bad"]
    assert crash.status == "FAIL"
    assert "exited with code 3" in crash.reason and "crash_on_bad got a bad count" in crash.reason
    structured = checks["PC-11:bad_structured"]
    assert structured.status == "FAIL" and "'one' is not of type 'integer'" in structured.reason
    assert checks["PC-10:bad_structured"].status == "PASS"  # it answered; only its content is wrong
    assert checks["PC-06"].status == "FAIL" and "missing: no_such_tool" in checks["PC-06"].reason
    assert broken_report.exit_code == 1


def test_checks_go_on_after_each_defect(broken_report: CheckReport) -> None:
    checks = by_id(broken_report)
    # the defects are confined to their checks: everything else passed, including checks run
    # after the hang and after the crash (each restarted the server)
    failed = {r.id for r in broken_report.checks if r.status == "FAIL"}
    assert failed == {
        "PC-03:bad_schema",
        "PC-06",
        "PC-10:malformed",
        "PC-10:hang",
        "PC-21:crash_on_bad",
        "PC-22:crash_on_bad",
        "PC-11:bad_structured",
    }
    for check_id in ("PC-03:echo", "PC-10:echo", "PC-10:crash_on_bad", "PC-10:bad_schema", "PC-20"):
        assert checks[check_id].status == "PASS", checks[check_id]
    assert checks["PC-20"].reason.startswith("JSON-RPC error -32602")
    assert "PC-21:hang" not in checks  # no required argument to leave out
    assert checks["PC-24"].status == "PASS"
    assert checks["PC-07"].status == "SKIP" and checks["PC-23"].status == "SKIP"  # no resources declared
    assert broken_report.summary.failed == len(failed)


def test_a_server_that_cannot_be_restarted_skips_the_rest(tmp_path: Path) -> None:
    config = broken_config("--tools", "echo,crash_on_bad", "--start-once", str(tmp_path / "started"))
    report = run_check(config, layers=["protocol"], call_timeout_s=5, log_path=tmp_path / "log")
    checks = by_id(report)
    assert checks["PC-10:crash_on_bad"].status == "PASS"  # count=1 is fine
    assert checks["PC-21:crash_on_bad"].status == "FAIL"  # no count: it exits, and cannot come back
    for check_id in ("PC-22:crash_on_bad", "PC-24"):
        assert checks[check_id].status == "SKIP"
        assert checks[check_id].reason.startswith("server could not be restarted: ")
        assert "exited with code 1 during start-up" in checks[check_id].reason
    assert report.exit_code == 1


# --- tools that change state --------------------------------------------------------------------------


def destructive_config(marker_dir: Path, **check: object) -> Config:
    server = ServerConfig(
        name="destructive",
        command=sys.executable,
        args=[str(SERVERS / "destructive_server.py")],
        env={"MARKER_DIR": str(marker_dir)},
    )
    return Config.model_validate({"server": server.model_dump(), "check": check})


def test_state_changing_tools_are_never_called_by_default(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    report = run_check(destructive_config(markers), log_path=tmp_path / "log")  # all three layers
    assert sorted(path.name for path in markers.iterdir()) == []  # nothing ran
    checks = by_id(report)
    assert checks["PC-10:delete_everything"].status == "SKIP"
    assert "destructiveHint: true" in checks["PC-10:delete_everything"].reason
    assert "readOnlyHint: false" in checks["PC-10:write_note"].reason
    assert "declares no annotations" in checks["PC-10:purge_cache"].reason
    assert checks["PC-21:write_note"].status == checks["PC-22:write_note"].status == "SKIP"
    # an unannotated tool with a harmless name is not called either (the MCP defaults say it may
    # write), its missing annotations are a warning, and the reason says how to allow the call
    assert checks["PC-10:lookup"].status == "SKIP"
    assert "declares no annotations" in checks["PC-10:lookup"].reason
    assert "readOnlyHint: true" in checks["PC-10:lookup"].reason
    assert "opt_in" in checks["PC-10:lookup"].reason
    assert checks["PC-05:lookup"].status == "WARN"
    # the tool annotated read-only is the one that is called, and the only one coverage counts
    assert checks["PC-10:list_things"].status == "PASS"
    assert report.coverage is not None
    assert [(entry.tool, entry.status) for entry in report.coverage.tools] == [("list_things", "reached")]
    assert report.exit_code == 0


def test_a_cases_file_opts_a_destructive_tool_in(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "opt_in:\n"
        "  - tool: delete_everything\n"
        "    reason: the test server has nothing to lose\n"
        "cases:\n"
        "  - id: wipe\n"
        "    tool: delete_everything\n"
        "    arguments: {}\n",
        encoding="utf-8",
    )
    report = run_check(
        destructive_config(markers), layers=["protocol"], cases_path=cases, log_path=tmp_path / "log"
    )
    checks = by_id(report)
    assert (markers / "delete_everything").exists()
    assert checks["PC-10:delete_everything"].status == "PASS"
    assert checks["PC-10:delete_everything"].details["arguments_source"] == "wipe"
    assert not (markers / "write_note").exists() and not (markers / "purge_cache").exists()


# --- annotations and duplicated names -------------------------------------------------------------------


@pytest.fixture(scope="module")
def hints_report(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    server = ServerConfig(name="hints", command=sys.executable, args=[str(SERVERS / "hints_server.py")])
    log = tmp_path_factory.mktemp("hints") / "server.stderr.log"
    return run_check(Config(server=server), layers=["protocol"], log_path=log)


def test_a_duplicated_name_is_one_fail_and_its_first_definition_is_checked(hints_report) -> None:
    checks = by_id(hints_report)  # asserts that no id appears twice
    names = checks["PC-04"]
    assert names.status == "FAIL"
    assert "listed more than once: find (2 times)" in names.reason
    assert "the other checks judge the first definition" in names.reason
    assert names.details["duplicates"] == ["find"]
    assert checks["PC-02"].details["tools"].count("find") == 2  # tools/list as the server gave it
    for check_id in ("PC-03", "PC-05", "PC-10"):
        assert len([r for r in hints_report.checks if r.id == f"{check_id}:find"]) == 1
    # the first definition: described, annotated read-only, nothing required (the second has none of these)
    assert checks["PC-03:find"].status == "PASS"
    assert checks["PC-05:find"].status == "PASS"
    assert checks["PC-10:find"].status == "PASS" and checks["PC-10:find"].details["arguments"] == {}
    assert "PC-21:find" not in checks
    failed = {r.id for r in hints_report.checks if r.status == "FAIL"}
    assert failed == {"PC-04"}


def test_annotations_warn_only_where_a_client_lacks_a_hint_it_needs(hints_report) -> None:
    checks = by_id(hints_report)
    pc05 = {tool: checks[f"PC-05:{tool}"] for tool in ("find", "count", "save", "tag", "merge", "erase")}
    assert {tool: r.status for tool, r in pc05.items()} == {
        "find": "PASS",  # read-only: destructive/idempotent mean nothing, openWorldHint is only a note
        "count": "PASS",
        "save": "WARN",  # may change state, idempotentHint left out
        "tag": "WARN",  # annotations without readOnlyHint: the default false applies
        "merge": "PASS",  # readOnlyHint left out, but both hints that matter for a writer given
        "erase": "WARN",  # no annotations at all
    }
    assert pc05["find"].reason == "readOnlyHint=true; openWorldHint absent (default true)"
    assert pc05["count"].reason == (
        "readOnlyHint=true, destructiveHint=false, idempotentHint=true, openWorldHint=false"
    )
    assert pc05["save"].reason == "may change state but leaves out idempotentHint (default false)"
    assert pc05["tag"].reason == (
        "may change state but leaves out destructiveHint (default true), idempotentHint (default false); "
        "readOnlyHint absent (default false: it may change state); openWorldHint absent (default true)"
    )
    assert "readOnlyHint absent" in pc05["merge"].reason
    assert pc05["erase"].reason.startswith("no annotations")
    # read-only and destructive: no hint is missing, but check still does not call it
    peek = checks["PC-05:peek"]
    assert peek.status == "PASS"
    assert (
        "destructiveHint=true means nothing for a read-only tool, but check does not call it" in peek.reason
    )
    assert checks["PC-10:peek"].status == "SKIP"
