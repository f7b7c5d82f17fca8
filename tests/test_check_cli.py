"""`mcpipechekr check` from the command line: exit codes, the three formats, --output, expected failures.

The server is the raw JSON-RPC fixture with only the tools a test needs (`--tools`), so each run
starts in a few milliseconds; one test runs the real `mcpipechekr` process end to end.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.cli import main

BROKEN = Path(__file__).resolve().parent / "servers" / "broken_server.py"
TINY = Path(__file__).resolve().parent / "servers" / "tiny_server.py"


def broken(tools: str) -> str:
    return shlex.join([sys.executable, str(BROKEN), "--tools", tools])


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from an empty folder, so no config.yaml of this repository is picked up."""
    monkeypatch.chdir(tmp_path)


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_help_names_the_layers_formats_and_exit_codes() -> None:
    code, out = check("--help")
    assert code == 0
    for text in ("--layer", "protocol|functional|quality", "--format", "text|json|junit", "--output"):
        assert text in out
    assert "Exit codes: 0" in out


def test_text_report_and_exit_0_when_everything_passes() -> None:
    code, out = check("--command", broken("echo"), "--layer", "protocol")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "MCP Protocol Compliance Report"
    assert lines[1].startswith("Server: broken_server (stdio: ")
    assert any(
        line.startswith("  PC-10:echo call with generated arguments ..") and " PASS (" in line
        for line in lines
    )
    # PC-06/07/08/23: nothing to check; PC-11:echo: echo declares no outputSchema;
    # PC-12:echo and PC-13:echo: it is annotated read-only and idempotent, and keeps both
    # PC-30…PC-42 over a raw session: all pass but PC-35 (no logging) and PC-36 (echo reports no progress);
    # PC-50…PC-57: no prompts, resources or completions declared; PC-58/59 judge echo's answer;
    # PC-70…PC-79: a stdio server has no HTTP transport
    assert lines[-1] == "Summary: 25/50 passed, 0 failed, 25 skipped"
    report_lines = [line for line in lines if line.startswith("  PC-")]
    assert len(report_lines) == int(lines[-1].split("/")[1].split()[0])  # one line per check


def test_json_is_a_check_report_and_a_failure_exits_1() -> None:
    code, out = check("--command", broken("echo,malformed"), "--layer", "protocol", "--format", "json")
    assert code == 1
    report = CheckReport.model_validate_json(out)
    assert report.exit_code == 1
    failed = [r.id for r in report.checks if r.status == "FAIL"]
    assert failed == ["PC-10:malformed"]
    assert report.summary.failed == 1
    assert report.summary.total == len(report.checks)


def test_junit_to_a_file_parses_as_xml(tmp_path: Path) -> None:
    target = tmp_path / "out" / "check.xml"
    code, out = check(
        "--command",
        broken("echo,malformed"),
        "--layer",
        "protocol",
        "--format",
        "junit",
        "--output",
        str(target),
    )
    assert code == 1
    assert "Summary: " in out  # stdout shows the text report for the CI log
    root = ET.parse(target).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [suite.get("name") for suite in suites] == ["protocol"]
    cases = {case.get("name").split()[0]: case for case in suites[0].findall("testcase")}
    assert cases["PC-10:malformed"].find("failure") is not None
    assert "got 42" in cases["PC-10:malformed"].find("failure").get("message")
    assert cases["PC-07"].find("skipped") is not None
    assert cases["PC-10:echo"].find("failure") is None and cases["PC-10:echo"].find("skipped") is None
    assert suites[0].get("failures") == "1" and root.get("failures") == "1"
    assert int(suites[0].get("tests")) == len(cases)
    assert not list(tmp_path.glob("out/.*"))  # no temporary file left behind


def test_expected_failures_pass_the_run_and_stale_entries_fail_it(tmp_path: Path) -> None:
    listed = tmp_path / "expected.yaml"
    listed.write_text("- id: PC-10:malformed\n  reason: content blocks are fixed in 2.0\n", encoding="utf-8")
    code, out = check(
        "--command", broken("echo,malformed"), "--layer", "protocol", "--expected-failures", str(listed)
    )
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("  PC-10:malformed"))
    assert " XFAIL " in line and "[expected failure: content blocks are fixed in 2.0]" in line
    assert "1 expected to fail" in out.splitlines()[-1]

    listed.write_text(
        "- id: PC-10:malformed\n  reason: fixed in 2.0\n- id: PC-10:echo\n  reason: was flaky\n",
        encoding="utf-8",
    )
    code, out = check(
        "--command",
        broken("echo,malformed"),
        "--layer",
        "protocol",
        "--expected-failures",
        str(listed),
        "--format",
        "json",
    )
    assert code == 1
    report = CheckReport.model_validate_json(out)
    assert report.summary.stale_expected_failures == 1
    assert report.summary.expected_failures == 1 and report.summary.failed == 1
    stale = next(r for r in report.checks if r.id == "stale:PC-10:echo")
    assert stale.status == "FAIL" and "remove it from the list in expected.yaml" in stale.reason


def test_bad_input_exits_2_with_file_and_line(tmp_path: Path) -> None:
    listed = tmp_path / "expected.yaml"
    listed.write_text("- id: PC-10:echo\n", encoding="utf-8")  # no reason
    code, out = check("--command", broken("echo"), "--expected-failures", str(listed))
    assert code == 2
    assert "expected.yaml:1" in out and "reason" in out

    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - id: Not A Slug\n    tool: echo\n", encoding="utf-8")
    code, out = check("--command", broken("echo"), "--cases", str(cases))
    assert code == 2
    assert "cases.yaml:2" in out

    code, out = check("--layer", "protocol")  # no config.yaml here, no server flags
    assert code == 2
    assert "config.yaml" in out


def test_a_server_that_cannot_start_exits_2(tmp_path: Path) -> None:
    code, out = check("--command", shlex.join([sys.executable, str(TINY), "--exit-at-start", "3"]))
    assert code == 2
    assert "exited with code 3 during start-up" in out
    assert "missing DATABASE_URL" in out  # the server's own stderr


def test_config_supplies_cases_expected_failures_and_timeout(tmp_path: Path) -> None:
    (tmp_path / "expected.yaml").write_text("- id: PC-10:hang\n  reason: known hang\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text(
        "server:\n"
        f"  command: {json.dumps(sys.executable)}\n"
        f"  args: [{json.dumps(str(BROKEN))}, --tools, 'echo,hang']\n"
        "check:\n"
        "  expected_failures: expected.yaml\n"
        "  call_timeout_s: 0.5\n",
        encoding="utf-8",
    )
    code, out = check("--layer", "protocol", "--format", "json")
    report = CheckReport.model_validate_json(out)
    hang = next(r for r in report.checks if r.id == "PC-10:hang")
    assert "did not answer within 0.5s" in hang.reason
    assert hang.expected_failure == "known hang"
    assert code == 0


def test_real_process_writes_json_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpipechekr",
            "check",
            "--command",
            broken("echo"),
            "--layer",
            "protocol",
            "--format",
            "json",
            "--output",
            str(target),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    report = CheckReport.model_validate_json(target.read_text(encoding="utf-8"))
    assert report.exit_code == 0 and report.server == "broken_server"
    assert "\x1b[" not in done.stdout  # not a terminal: no colour codes
    assert done.stdout.splitlines()[0] == "MCP Protocol Compliance Report"


def test_a_server_flag_leaves_the_config_servers_cases_out(tmp_path: Path) -> None:
    """Cases written for config.yaml's server are not run against the server a flag names."""
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  - id: greets\n    tool: greet\n    arguments: {name: Ada}\n    expect: {contains: Ada}\n",
        encoding="utf-8",
    )
    (tmp_path / "config.yaml").write_text(
        "server:\n"
        f"  command: {json.dumps(sys.executable)}\n"
        f"  args: [{json.dumps(str(BROKEN))}, --tools, echo]\n"
        "check:\n"
        "  cases: cases.yaml\n",
        encoding="utf-8",
    )
    flags = ["check", "--command", broken("echo"), "--layer", "functional", "--format", "json"]
    result = CliRunner().invoke(main, flags, catch_exceptions=False)
    ids = [check.id for check in CheckReport.model_validate_json(result.stdout).checks]
    assert ids == ["FC"], ids  # the layer's SKIP: no cases file for this server
    assert "check.cases" in result.stderr and "--cases" in result.stderr
    assert result.exit_code == 0
    result = CliRunner().invoke(main, [*flags, "--cases", "cases.yaml"], catch_exceptions=False)
    ids = [check.id for check in CheckReport.model_validate_json(result.stdout).checks]
    assert ids == ["FC:greets"], ids
