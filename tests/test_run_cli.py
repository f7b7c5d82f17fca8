"""`mcpipechekr run` end to end on the bundled example: the demo model, and a native agent over HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, text_reply, tool_call_reply

from mcpipechekr import __version__
from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.cli import main
from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.index_db import open_index
from mcpipechekr.findings.home import Home

REPO = Path(__file__).resolve().parents[1]
FIRST = "find-first-email-ron-chinn"
PROJECTION = "list-office-move-emails-2024"
COUNT = "count-dana-whitfield-2019"


def _project(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, extra: str = "") -> Path:
    shutil.copy(REPO / "tasks.yaml", tmp_path / "tasks.yaml")
    config = tmp_path / "config.yaml"
    config.write_text(
        "server:\n"
        "  name: emailindex\n"
        "  command: python\n"
        "  args: [server.py]\n"
        f"  cwd: {emailindex_dir}\n"
        f"  env: {{EMAILINDEX_DB: {emailindex_db}}}\n" + extra
    )
    return config


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """The command in its own process, as users run it (agents' stdio transports need real stdio)."""
    result = subprocess.run(
        [sys.executable, "-m", "mcpipechekr", "run", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
    )
    return result.returncode, result.stdout + result.stderr


def _calls(steps: list) -> list[tuple]:
    return [(s.tool, s.arguments, s.is_error, s.result_content) for s in steps if isinstance(s, ToolCall)]


@pytest.mark.slow
def test_demo_run_on_the_example(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path) -> None:
    config = _project(tmp_path, emailindex_dir, emailindex_db)
    # The demo model runs natively whatever the runner; the runner flags are still the run's record.
    code, output = _run(
        "--config", str(config), "--task", FIRST, "--task", PROJECTION, "--runner", "opencode",
        "--keep-builtin-tools", "--opencode-mode", "run",
    )  # fmt: skip
    assert code == 0, output
    assert "demo (scripted demo model)" in output
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["providers"]["phase1"] == "demo"
    assert manifest["parameters"] == {"keep_builtin_tools": True, "opencode_mode": "run"}
    assert (manifest["runner"], manifest["runner_version"]) == ("demo", f"mcpipechekr {__version__}")

    traces = {read_trace(p).task_id: read_trace(p) for p in (run_dir / "traces").glob("*.json")}
    assert set(traces) == {FIRST, PROJECTION}
    for trace in traces.values():
        assert trace.runner == "demo" and trace.status == "completed"
        journal = run_dir / "journals" / f"{trace.task_id}__demo__r001.jsonl"
        assert _calls(trace.steps) == _calls(journal_tool_calls(journal)), "results came from the live server"

    first = [s for s in traces[FIRST].steps if isinstance(s, ToolCall)]
    windows = [
        (c.arguments.get("date_from"), c.arguments.get("date_to")) for c in first if c.tool == "count_emails"
    ]
    assert len(windows) >= 2 and len(set(windows)) == len(windows), "it walks date windows to find the first"
    assert first[-1].tool == "query_email_database" and not first[-1].is_error

    projection = [s for s in traces[PROJECTION].steps if isinstance(s, ToolCall)]
    assert projection[0].is_error and "no such column: fts.rank" in (projection[0].error_text or "")
    assert "fields" in projection[0].arguments

    # every call of the run reached the findings home as a call record, shapes only
    home = Home.resolve(tmp_path / ".mcpipechekr")
    refresh_index(home)
    with contextlib.closing(open_index(home)) as index:
        rows = index.execute("SELECT tool, outcome, arg_shape FROM calls ORDER BY session, seq").fetchall()
    assert len(rows) == sum(len(_calls(trace.steps)) for trace in traces.values())
    assert ("query_email_database", "error") in {(tool, outcome) for tool, outcome, _ in rows}
    assert "Ron Chinn" not in "".join(shape for _, _, shape in rows)


@pytest.mark.slow
def test_native_agent_and_demo_compared_in_one_run(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path
) -> None:
    with FakeOpenAI() as fake:
        arguments = {"sender": "Dana Whitfield", "date_from": "2019-01-01", "date_to": "2019-12-31"}
        fake.enqueue(
            tool_call_reply("count_emails", arguments, prompt_tokens=300, completion_tokens=40),
            text_reply("Dana Whitfield sent them.", prompt_tokens=420, completion_tokens=12),
        )
        endpoint = f"    fake:\n      base_url: {fake.base_url}\n      api_key_env: FAKE_KEY\n"
        extra = "providers:\n  endpoints:\n" + endpoint
        config = _project(tmp_path, emailindex_dir, emailindex_db, extra)
        code, output = _run(
            "--config",
            str(config),
            "--task",
            COUNT,
            "--phase1-provider",
            "fake/fake-model",
            "--phase1-provider",
            "demo",
            env={"FAKE_KEY": "fake-key-0a1b2c3d4e"},
        )
    assert code == 0, output
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["providers"]["phase1"] == "fake/fake-model, demo"
    assert manifest["runner"] == "demo, native" and manifest["runner_version"].startswith("mcpipechekr ")
    assert "; pydantic-ai " in manifest["runner_version"]

    native = read_trace(run_dir / "traces" / f"{COUNT}__fake_fake-model__r001.json")
    demo = read_trace(run_dir / "traces" / f"{COUNT}__demo__r001.json")
    assert native.runner == "native" and native.status == "completed"
    assert native.final_answer == "Dana Whitfield sent them."
    journal = run_dir / "journals" / f"{COUNT}__fake_fake-model__r001.jsonl"
    assert _calls(native.steps) == _calls(journal_tool_calls(journal))
    ((tool, args, is_error, content),) = _calls(native.steps)
    assert (tool, args, is_error) == ("count_emails", arguments, False)
    assert json.loads(content[0]["text"])["count"] > 0
    assert (native.totals.input_tokens, native.totals.output_tokens) == (720, 52)
    assert native.totals.usage_source == "reported"
    assert demo.runner == "demo" and demo.totals.usage_source == "estimated"
    assert [c[0] for c in _calls(demo.steps)] == ["count_emails"]
    for file in run_dir.rglob("*"):
        assert not file.is_file() or b"fake-key-0a1b2c3d4e" not in file.read_bytes(), file


def test_bad_input_is_refused_with_exit_2(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKE_KEY", raising=False)
    endpoint = "    fake:\n      base_url: http://127.0.0.1:9/v1\n      api_key_env: FAKE_KEY\n"
    config = _project(tmp_path, emailindex_dir, emailindex_db, "providers:\n  endpoints:\n" + endpoint)

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(main, ["run", "--config", str(config), *args], catch_exceptions=False)
        return result.exit_code, result.output

    code, output = run("--phase1-provider", "nosuch/model")
    assert code == 2 and "--phase1-provider: unknown provider 'nosuch'" in output
    code, output = run("--repeat", "0")
    assert code == 2 and "--repeat" in output
    code, output = run("--task", "no-such-task")
    assert code == 2 and "unknown task id(s): no-such-task" in output
    code, output = run("--task", COUNT, "--keep-builtin-tools")
    assert code == 2 and "--keep-builtin-tools is for the agent CLIs (opencode, claude-code)" in output
    code, output = run("--task", COUNT, "--runner", "opencode", "--opencode-mode", "daemon")
    assert code == 2 and "'daemon' is not one of 'serve', 'run'" in output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    code, output = run("--help")
    assert code == 0 and "--phase1-provider" in output and "--concurrency" in output
    # a missing API key stops the whole run with its message, not a traceback
    code, output = run("--task", COUNT, "--phase1-provider", "fake/model")
    assert code == 2 and "needs an API key in $FAKE_KEY" in output
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"
