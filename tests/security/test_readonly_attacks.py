"""`check` and `baseline` call no tool that may change state unless a person said so: one test per attack.

The server (tests/servers/unannotated_writes_server.py) has six tools with no
annotations, named the way destructive tools are (`delete_everything`, `nuke`,
`rm`, ...), one annotated both read-only and destructive, and one properly
read-only. Every tool but the read-only one touches a file in the marker folder
its environment names when it runs, so each test asks the file system whether
a tool ran, not our own report. The commands run through the CLI, reading a
config.yaml, as a user runs them.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.cli import main

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("security.test_readonly_attacks")

SERVER = Path(__file__).resolve().parents[1] / "servers" / "unannotated_writes_server.py"
UNANNOTATED = ("delete_everything", "destroy_db", "nuke", "wipe_all_notes", "notes_delete", "rm")
WITH_REQUIRED_ARGUMENT = ("destroy_db", "rm")

TASKS = """\
tasks:
  - task_id: read-notes
    prompt: What notes are there?
    task_type: open_ended
    reference_calls:
      - tool: read_notes
  - task_id: wipe
    prompt: Delete everything, then show what is left.
    task_type: open_ended
    reference_calls:
      - tool: delete_everything
      - tool: read_notes
"""
WIPE_CALL_LINE = 11  # `- tool: delete_everything` above


def project(root: Path, *, tasks: str = TASKS) -> Path:
    """A folder with config.yaml (the server, its marker folder) and tasks.yaml; returns the marker folder."""
    root.mkdir(parents=True, exist_ok=True)
    markers = root / "markers"
    markers.mkdir()
    config = {
        "server": {
            "name": "writes",
            "command": sys.executable,
            "args": [str(SERVER)],
            "env": {"WRITES_MARKER_DIR": str(markers)},
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "tasks.yaml").write_text(tasks, encoding="utf-8")
    return markers


def ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def invoke(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--config", str(root / "config.yaml")], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def check(root: Path, *args: str) -> CheckReport:
    code, out, err = invoke(root, "check", "--format", "json", *args)
    assert code == 0, out + err
    return CheckReport.model_validate_json(out)


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    return {result.id: result for result in report.checks}


@pytest.fixture(scope="module")
def full_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, CheckResult], list[str]]:
    """Every layer, no cases file: the verdicts and the tools that ran."""
    root = tmp_path_factory.mktemp("full")
    markers = project(root)
    report = check(root)
    return by_id(report), ran(markers)


@pytest.mark.parametrize("tool", UNANNOTATED)
def test_check_does_not_call_an_unannotated_tool_whatever_its_name(
    full_check: tuple[dict[str, CheckResult], list[str]], tool: str
) -> None:
    checks, called = full_check
    assert tool not in called
    probes = ["PC-10"] + (["PC-21", "PC-22"] if tool in WITH_REQUIRED_ARGUMENT else [])
    for probe in probes:
        result = checks[f"{probe}:{tool}"]
        assert result.status == "SKIP", (probe, result)
        assert "declares no annotations" in result.reason
        assert "readOnlyHint: false and destructiveHint: true" in result.reason  # the MCP defaults
        assert "annotate it readOnlyHint: true" in result.reason
        assert f"list it under opt_in in the cases file (tool: {tool}" in result.reason
    assert checks[f"PC-05:{tool}"].status == "WARN"  # the missing annotations are reported as well


def test_check_does_not_call_a_tool_annotated_read_only_and_destructive(
    full_check: tuple[dict[str, CheckResult], list[str]],
) -> None:
    checks, called = full_check
    assert called == []  # nothing but the read-only tool ran in the whole check
    result = checks["PC-10:archive_notes"]
    assert result.status == "SKIP"
    assert "it is annotated destructiveHint: true" in result.reason
    assert "opt_in" in result.reason
    assert checks["PC-10:read_notes"].status == "PASS"  # the properly read-only tool is called


def test_quality_layer_alone_does_not_call_unannotated_tools(tmp_path: Path) -> None:
    markers = project(tmp_path)
    checks = by_id(check(tmp_path, "--layer", "quality"))
    assert ran(markers) == []
    for tool in (*UNANNOTATED, "archive_notes"):
        assert checks[f"QC-01:{tool}"].status == "SKIP"
        assert checks[f"QC-01:{tool}"].reason.startswith("not called: it ")
        assert "opt_in" in checks[f"QC-01:{tool}"].reason
    assert checks["QC-01:read_notes"].status == "PASS"


def test_a_case_on_an_unannotated_tool_is_skipped_without_opt_in(tmp_path: Path) -> None:
    markers = project(tmp_path)
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  - id: nuke-it\n    tool: nuke\n    arguments: {target: all}\n", encoding="utf-8"
    )
    checks = by_id(check(tmp_path, "--cases", str(tmp_path / "cases.yaml")))
    assert ran(markers) == []
    case = checks["FC:nuke-it"]
    assert case.status == "SKIP"
    assert case.reason.startswith("tool 'nuke' is not called: it declares no annotations")
    assert "list it under opt_in in the cases file (tool: nuke" in case.reason


def test_a_cases_file_opt_in_calls_the_opted_in_tool_and_nothing_else(tmp_path: Path) -> None:
    markers = project(tmp_path)
    (tmp_path / "cases.yaml").write_text(
        textwrap.dedent(
            """\
            opt_in:
              - tool: notes_delete
                reason: the test server keeps nothing; read_notes shows what is left
            cases:
              - id: delete-then-read
                steps:
                  - {id: delete, tool: notes_delete, arguments: {target: scratch}}
                cleanup:
                  - {id: look, tool: read_notes}
            """
        ),
        encoding="utf-8",
    )
    checks = by_id(check(tmp_path, "--cases", str(tmp_path / "cases.yaml")))
    assert ran(markers) == ["notes_delete"]
    assert checks["FC:delete-then-read"].status == "PASS"
    assert checks["PC-10:notes_delete"].status == "PASS"
    assert checks["PC-10:nuke"].status == "SKIP"  # the opt-in names one tool, not its look-alikes


def test_baseline_refuses_reference_calls_on_an_unannotated_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the message names tasks.yaml as the user would type it
    markers = project(tmp_path)
    code, out, err = invoke(tmp_path, "baseline")
    assert code == 2, out + err
    assert ran(markers) == []
    assert not (tmp_path / "runs" / "baseline.json").exists()  # the read-only task is not run either
    assert (
        f"tasks.yaml:{WIPE_CALL_LINE}: task 'wipe' field 'reference_calls[0].tool': "
        "'delete_everything' may change state: it declares no annotations" in err
    )
    assert "set allow_writes: true on the task" in err


def test_baseline_runs_a_write_reference_call_when_the_task_allows_writes(tmp_path: Path) -> None:
    allowed = TASKS.replace("  - task_id: wipe\n", "  - task_id: wipe\n    allow_writes: true\n")
    markers = project(tmp_path, tasks=allowed)
    code, out, err = invoke(tmp_path, "baseline")
    assert code == 0, out + err
    assert ran(markers) == ["delete_everything"]
    assert "baselined  wipe: reference_calls" in out


def test_validate_warns_about_a_reference_call_the_baseline_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    markers = project(tmp_path)
    code, out, err = invoke(tmp_path, "validate")
    assert code == 0, out + err
    assert ran(markers) == []
    assert (
        f"warning: tasks.yaml:{WIPE_CALL_LINE}: task 'wipe' field 'reference_calls[0].tool': "
        "'delete_everything' may change state" in err
    )
    assert "read_notes" not in err  # the read-only call is not warned about
