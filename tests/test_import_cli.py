"""`mcpipechekr import`: sessions recorded with the real CLIs (tests/fixtures) become traces of a run;
anything else is refused, naming what is wrong, and nothing is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fakes.agent_scenarios import FINAL, PROMPT, SECRET, TASK_ID, USAGE

from mcpipechekr.artifacts.rundir import create_run_dir
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, list_traces, read_trace
from mcpipechekr.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENCODE = FIXTURES / "opencode" / "find-first.export.json"
CLAUDE = FIXTURES / "claude_code" / "find-first.jsonl"
TASKS = Path(__file__).resolve().parents[1] / "tasks.yaml"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config.yaml naming the example server (with a secret in its env), the repo's tasks, one run."""
    monkeypatch.setenv("IMPORT_TEST_TOKEN", SECRET)
    config = {
        "server": {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "env": {"EMAILINDEX_API_TOKEN": "${IMPORT_TEST_TOKEN}"},
        },
        "paths": {"tasks": str(TASKS), "runs": str(tmp_path / "runs")},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def invoke(project: Path, *args: str):
    return CliRunner().invoke(main, ["import", *args, "--config", str(project / "config.yaml")])


def test_an_opencode_export_becomes_the_next_trace_of_the_latest_run(project: Path):
    create_run_dir(project / "runs")
    latest = create_run_dir(project / "runs")
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID)
    assert result.exit_code == 0, result.output
    [path] = list_traces(latest)
    assert f"wrote {path}: completed, 3 model turn(s), 2 tool call(s), 672 tokens" in result.output

    trace = read_trace(path)
    assert (trace.runner, trace.provider, trace.model, trace.repetition) == (
        "import",
        "fake/fake-model",
        "fake-model",
        1,
    )
    assert (trace.prompt, trace.final_answer, trace.status) == (PROMPT, FINAL, "completed")
    turns = [step for step in trace.steps if isinstance(step, ModelTurn)]
    calls = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert [(turn.usage.input_tokens, turn.usage.output_tokens) for turn in turns] == USAGE
    assert [call.tool for call in calls] == ["count_emails", "query_email_database"]
    assert "fts.rank" in calls[1].error_text

    again = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID)
    assert again.exit_code == 0, again.output
    assert [read_trace(p).repetition for p in list_traces(latest)] == [1, 2]
    assert read_trace(path) == trace  # the first import is untouched


def test_a_claude_code_log_goes_into_the_named_run(project: Path):
    older = create_run_dir(project / "runs")
    newer = create_run_dir(project / "runs")
    result = invoke(project, "--from", "claude-code", str(CLAUDE), "--task", TASK_ID, "--run", older.run_id)
    assert result.exit_code == 0, result.output
    assert list_traces(newer) == []
    [path] = list_traces(older)
    trace = read_trace(path)
    assert (trace.runner, trace.provider, trace.status) == ("import", "anthropic/claude-fake-1", "completed")
    assert trace.prompt.startswith(
        "When was Ron Chinn first mentioned"
    )  # the task's: stream-json has no prompt
    assert [step.tool for step in trace.steps if isinstance(step, ToolCall)] == [
        "count_emails",
        "query_email_database",
    ]
    assert (trace.totals.input_tokens, trace.totals.output_tokens) == (606, 66)


def test_secrets_are_redacted_from_the_imported_trace(project: Path, tmp_path: Path):
    export = json.loads(OPENCODE.read_text())
    tool = next(p for p in export["messages"][1]["parts"] if p["type"] == "tool")
    tool["state"]["output"] = f"token={SECRET}"
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps(export))
    run = create_run_dir(project / "runs")
    result = invoke(
        project, "--from", "opencode", str(planted), "--task", TASK_ID, "--provider", "mine/model"
    )
    assert result.exit_code == 0, result.output
    [path] = list_traces(run)
    assert path.name == f"{TASK_ID}__mine_model__r001.json"
    assert SECRET not in path.read_text()
    assert "token=" in path.read_text()


@pytest.mark.parametrize(
    ("kind", "content", "message"),
    [
        ("opencode", "this is not json", "not an opencode export: the file is not JSON"),
        ("opencode", CLAUDE.read_text(), "not an opencode export: the file is not JSON"),
        (
            "opencode",
            '{"info": {"id": "ses_1"}, "messages": [{"info": {}}]}',
            "not an opencode export: messages[0].info: no `role`",
        ),
        ("claude-code", OPENCODE.read_text(), "not a Claude Code stream-json log: line 1 is not JSON"),
        (
            "claude-code",
            '{"type": "system", "subtype": "init"}\n',
            "not a Claude Code stream-json log: it has no `assistant`",
        ),
    ],
)
def test_malformed_input_is_refused_and_nothing_is_written(
    project: Path, kind: str, content: str, message: str
):
    run = create_run_dir(project / "runs")
    bad = project / "session.bad"
    bad.write_text(content)
    result = invoke(project, "--from", kind, str(bad), "--task", TASK_ID)
    assert result.exit_code == 2
    assert f"{bad}: {message}" in result.output
    assert not run.traces.exists() or list(run.traces.iterdir()) == []


def test_a_wrong_task_run_or_kind_is_refused(project: Path):
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID)
    assert result.exit_code == 2 and "there are no runs yet" in result.output
    run = create_run_dir(project / "runs")
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", "no-such-task")
    assert result.exit_code == 2 and f"{TASKS}: no task `no-such-task`" in result.output
    result = invoke(
        project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID, "--run", "run-20000101-001"
    )
    assert result.exit_code == 2 and "no run `run-20000101-001`" in result.output
    result = invoke(project, "--from", "cursor", str(OPENCODE), "--task", TASK_ID)
    assert result.exit_code == 2 and "'cursor' is not one of 'opencode', 'claude-code'" in result.output
    assert not run.traces.exists()


def test_help_names_both_formats():
    result = CliRunner().invoke(main, ["import", "--help"])
    assert result.exit_code == 0
    assert "opencode export" in result.output and "stream-json" in result.output
