"""`check` against quirks met on servers published in the registries (tests/servers/quirks_server.py).

Each quirk is an answer a real server gives that is not a defect of the kind
its check looks for: a resources server without templates, an open-world tool
that reports a failed fetch in an ordinary result.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.sources import server_values
from mcpipechekr.config import Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_quirks")

SERVER = Path(__file__).resolve().parent / "servers" / "quirks_server.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    server = ServerConfig(name="quirks", command=sys.executable, args=[str(SERVER)])
    log = tmp_path_factory.mktemp("quirks") / "server.stderr.log"
    return run_check(Config(server=server), layers=["protocol"], log_path=log)


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    return {result.id: result for result in report.checks}


def test_resources_without_templates_is_a_warning_that_names_the_method(report: CheckReport) -> None:
    resources = by_id(report)["PC-07"]
    assert resources.status == "WARN", resources.reason
    assert resources.reason.startswith("1 resource(s); resources/templates/list: ")
    assert "Method not found" in resources.reason
    assert "resources/list:" not in resources.reason


def test_an_open_world_success_that_reports_a_failed_fetch_needs_network(report: CheckReport) -> None:
    checks = by_id(report)
    lookup = checks["PC-10:lookup_package"]
    assert lookup.status == "SKIP", lookup.reason
    assert lookup.reason.startswith("needs network: answered without isError: Error searching packages")
    # a long real answer that mentions a timeout is still a success, and a closed-world tool is untouched
    assert checks["PC-10:weather_report"].status == "PASS"
    assert checks["PC-10:shelf_status"].status == "PASS"
    assert report.coverage is not None
    statuses = {tool.tool: tool.status for tool in report.coverage.tools}
    assert statuses == {
        "lookup_package": "needs_network",
        "weather_report": "reached",
        "shelf_status": "reached",
        "list_shelves": "reached",
    }


def test_a_setting_given_through_env_on_the_command_line_feeds_paths(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "monday.txt").write_text("buy pears\n")
    program = Path(__file__).resolve().parent / "servers" / "confined_notes_server.py"
    server = ServerConfig(
        name="notes", command="env", args=[f"NOTES_ROOT={notes}", sys.executable, str(program)]
    )
    report = run_check(Config(server=server), layers=["protocol"], log_path=tmp_path / "server.stderr.log")
    read = by_id(report)["PC-10:read_note"]
    assert read.status == "PASS", read.reason
    assert read.details["arguments"] == {"path": str(notes / "monday.txt")}
    # the interpreter and the server's own file are the program, never arguments for its tools
    paths = {found.value for found in server_values(server).files + server_values(server).directories}
    assert str(notes) in paths and str(notes / "monday.txt") in paths
    assert str(Path(sys.executable).resolve()) not in paths and str(program) not in paths
