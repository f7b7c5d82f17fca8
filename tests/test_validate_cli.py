"""`mcpipechekr validate`: the shipped files pass, bad inputs give exact file:line messages and exit 2."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mcpipechekr.cli import main
from mcpipechekr.cli.common import (
    config_options,
    effective_config,
    provider_options,
    server_options,
    task_selection_options,
    tasks_file,
)
from mcpipechekr.tasks import load_tasks, select_tasks

ROOT = Path(__file__).resolve().parents[1]

# A real MCP server with two tools, written beside the test's config.yaml.
PROBE_SERVER = """
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("probe")
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False)


@app.tool(description="Echo the text back.", annotations=READ_ONLY)
def echo(text: str) -> str:
    return text


@app.tool(description="Add two whole numbers.", annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    app.run()
"""

CONFIG = """
server:
  name: probe
  command: python
  args: [server.py]
  cwd: .
  health: {timeout_s: 20}
"""

TASKS = """
tasks:
  - task_id: echo-hello
    prompt: Say hello back to me.
    task_type: deterministic
    expected_tool: echo
    reference_calls:
      - tool: echo
        arguments: {text: hello}
  - task_id: add-numbers
    prompt: What is 2 + 3?
    task_type: deterministic
    reference_calls:
      - tool: add
        arguments: {a: 2, b: 3}
"""


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the probe server, config.yaml and tasks.yaml; the current folder during the test."""
    (tmp_path / "server.py").write_text(dedent(PROBE_SERVER), encoding="utf-8")
    (tmp_path / "config.yaml").write_text(dedent(CONFIG), encoding="utf-8")
    (tmp_path / "tasks.yaml").write_text(dedent(TASKS), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def validate(*args: str):
    return CliRunner().invoke(main, ["validate", *args], catch_exceptions=False)


def test_shipped_config_and_tasks_pass(monkeypatch):
    monkeypatch.chdir(ROOT)
    count = len(load_tasks(ROOT / "tasks.yaml").tasks)
    result = validate("--offline")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        f"ok: config.yaml, tasks.yaml ({count} tasks)\n",
        "",
    )


def test_console_script_in_a_real_process(project):
    script = Path(sys.executable).with_name("mcpipechekr")
    done = subprocess.run(
        [str(script), "validate", "--offline"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    count = len(load_tasks(ROOT / "tasks.yaml").tasks)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"ok: config.yaml, tasks.yaml ({count} tasks)\n",
        "",
    )

    (project / "tasks.yaml").write_text("tasks:\n  - task_id: x\n    task_type: maybe\n", encoding="utf-8")
    done = subprocess.run(
        [str(script), "validate", "--offline"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "tasks.yaml:2: task 'x' field 'prompt': is required",
        "tasks.yaml:3: task 'x' field 'task_type': must be deterministic or open_ended",
    ]


BAD_INPUTS = {
    "bad-yaml": (
        "config.yaml",
        "server:\n  command: python\n  args: [server.py\n",
        ["config.yaml:4:1: YAML syntax error: expected ',' or ']', but got '<stream end>'"],
    ),
    "wrong-type": (
        "config.yaml",
        CONFIG + "timeouts:\n  task_s: soon\n",
        ["config.yaml:8: field 'timeouts.task_s': must be a number"],
    ),
    "bad-number": (
        "config.yaml",
        CONFIG.replace("timeout_s: 20", "timeout_s: 0"),
        ["config.yaml:6: field 'server.health.timeout_s': must be greater than 0"],
    ),
    "unknown-field": (
        "config.yaml",
        CONFIG.replace("  health:", "  helth:"),
        [
            "config.yaml:6: field 'server.helth': unknown field (known: name, command, args, env, cwd, url, "
            "headers, start, repo, repo_template, health)"
        ],
    ),
    "bad-provider": (
        "config.yaml",
        CONFIG + "providers:\n  phase1: gpt4o\n",
        [
            "config.yaml:8: field 'providers.phase1': 'gpt4o' names no provider: write `provider/model` "
            "(e.g. openai/gpt-4o), pydantic-ai's `provider:model` (e.g. anthropic:claude-sonnet-4-6), "
            "or `demo`"
        ],
    ),
    "unknown-provider": (
        "config.yaml",
        CONFIG + "providers:\n  phase2: acme/big-model\n",
        None,  # checked by prefix below: the list of known providers is long
    ),
    "missing-server": (
        "config.yaml",
        "loop:\n  max_iterations: 2\n",
        [
            "config.yaml:1: field 'server': is required: "
            "describe the server under test (`command` or `url`), "
            "or pass --command, --url or --from-mcp-json"
        ],
    ),
    "unset-variable": (
        "config.yaml",
        CONFIG + "  env:\n    API_KEY: ${VALIDATE_TEST_UNSET_KEY}\n",
        [
            "config.yaml:8: field 'server.env.API_KEY': "
            "environment variable 'VALIDATE_TEST_UNSET_KEY' is not set: "
            "set it, add it to .env beside the file, or write ${VALIDATE_TEST_UNSET_KEY:-default}"
        ],
    ),
    "duplicate-id": (
        "tasks.yaml",
        TASKS.replace("task_id: add-numbers", "task_id: echo-hello"),
        ["tasks.yaml:9: task 'echo-hello' field 'task_id': duplicate id (first used at line 2)"],
    ),
    "missing-prompt": (
        "tasks.yaml",
        TASKS.replace("    prompt: What is 2 + 3?\n", ""),
        ["tasks.yaml:9: task 'add-numbers' field 'prompt': is required"],
    ),
    "bad-task-type": (
        "tasks.yaml",
        TASKS.replace("task_type: deterministic", "task_type: exact", 1),
        ["tasks.yaml:4: task 'echo-hello' field 'task_type': must be deterministic or open_ended"],
    ),
    "bad-task-id": (
        "tasks.yaml",
        TASKS.replace("echo-hello", "Echo Hello"),
        [
            "tasks.yaml:2: task 'Echo Hello' field 'task_id': "
            "must be a slug: lowercase letters, digits and '-', "
            "starting with a letter or digit, e.g. find-first-email"
        ],
    ),
    "duplicate-key": (
        "tasks.yaml",
        TASKS.replace("    expected_tool: echo\n", "    expected_tool: echo\n    expected_tool: add\n"),
        ["tasks.yaml:6: duplicate key 'tasks[0].expected_tool' (first given at line 5)"],
    ),
    "empty-tasks": ("tasks.yaml", "", ["tasks.yaml: task file is empty: expected a mapping of fields"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_exit_2_with_exact_lines(project, monkeypatch, case):
    monkeypatch.delenv("VALIDATE_TEST_UNSET_KEY", raising=False)
    name, text, expected = BAD_INPUTS[case]
    (project / name).write_text(dedent(text) if text.startswith("\n") else text, encoding="utf-8")
    result = validate("--offline")
    assert (result.exit_code, result.stdout) == (2, "")
    lines = result.stderr.splitlines()
    if expected is None:
        assert len(lines) == 1
        assert lines[0].startswith(
            "config.yaml:8: field 'providers.phase2': "
            "unknown provider 'acme' in 'acme/big-model': use one of "
        )
        assert lines[0].endswith(", or name an endpoint under providers.endpoints")
    else:
        assert lines == expected


def test_every_problem_in_both_files_is_reported(project):
    (project / "config.yaml").write_text(
        dedent(CONFIG).replace("timeout_s: 20", "timeout_s: -1") + "loop: {max_iterations: 0, retries: 1}\n",
        encoding="utf-8",
    )
    (project / "tasks.yaml").write_text(
        dedent(TASKS)
        .replace("task_type: deterministic", "task_type: open", 1)
        .replace("task_id: add-numbers", "task_id: echo-hello")
        .replace("arguments: {a: 2, b: 3}", "arguments: [2, 3]"),
        encoding="utf-8",
    )
    result = validate("--offline")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "config.yaml:6: field 'server.health.timeout_s': must be greater than 0",
        "config.yaml:7: field 'loop.max_iterations': must be at least 1",
        "config.yaml:7: field 'loop.retries': unknown field (known: max_iterations, stop_when)",
        "tasks.yaml:4: task 'echo-hello' field 'task_type': must be deterministic or open_ended",
        "tasks.yaml:9: task 'echo-hello' field 'task_id': duplicate id (first used at line 2)",
        "tasks.yaml:14: task 'echo-hello' field 'reference_calls[0].arguments': "
        "must be a mapping of names to values",
    ]


def test_tool_names_are_checked_against_the_running_server(project):
    ok = validate()
    assert (ok.exit_code, ok.stdout, ok.stderr) == (0, "ok: config.yaml, tasks.yaml (2 tasks)\n", "")

    (project / "tasks.yaml").write_text(
        dedent(TASKS)
        .replace("expected_tool: echo", "expected_tool: shout")
        .replace("- tool: add", "- tool: sum")
        + "selection_cases:\n  - query: repeat after me\n    expected_tool: echo\n",
        encoding="utf-8",
    )
    bad = validate()
    assert (bad.exit_code, bad.stdout) == (2, "")
    assert bad.stderr.splitlines() == [
        "tasks.yaml:5: task 'echo-hello' field 'expected_tool': "
        "the server has no tool 'shout' (tools: add, echo)",
        "tasks.yaml:13: task 'add-numbers' field 'reference_calls[0].tool': the server has no tool 'sum' "
        "(tools: add, echo)",
    ]
    offline = validate("--offline")
    assert offline.exit_code == 0  # the same file passes when the server is not asked


def test_unreachable_server_is_a_warning_not_an_error(project):
    (project / "config.yaml").write_text(
        dedent(CONFIG).replace("args: [server.py]", 'args: ["-c", "raise SystemExit(3)"]'), encoding="utf-8"
    )
    result = validate()
    assert (result.exit_code, result.stdout) == (0, "ok: config.yaml, tasks.yaml (2 tasks)\n")
    assert result.stderr.startswith("warning: server 'probe' not reachable, tool names not checked: ")


def test_server_flags_override_config(project):
    (project / "config.yaml").write_text("loop:\n  max_iterations: 2\n", encoding="utf-8")
    result = validate("--command", "python server.py")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "ok: config.yaml, tasks.yaml (2 tasks)\n",
        "",
    )

    conflict = validate("--command", "python server.py", "--url", "http://127.0.0.1:1/mcp")
    assert conflict.exit_code == 2
    assert conflict.stderr == (
        "Error: --command and --url are mutually exclusive: give one way to reach the server\n"
    )


def test_provider_flag_is_checked_and_named(project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-validate-test")  # a real model needs its key
    result = validate("--offline", "--phase1-provider", "openai/")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "--phase1-provider: 'openai/' is not a provider string: write `provider/model` (e.g. openai/gpt-4o), "
        "pydantic-ai's `provider:model` (e.g. anthropic:claude-sonnet-4-6), or `demo`"
    ]
    assert validate("--offline", "--phase1-provider", "anthropic:claude-sonnet-4-6").exit_code == 0


def test_tasks_path_from_flag_and_from_config(project):
    (project / "tasks.yaml").unlink()
    (project / "sub").mkdir()
    (project / "sub" / "mine.yaml").write_text(dedent(TASKS), encoding="utf-8")
    missing = validate("--offline")
    assert (missing.exit_code, missing.stderr) == (2, "tasks.yaml: task file not found\n")
    by_flag = validate("--offline", "--tasks", "sub/mine.yaml")
    assert by_flag.stdout == "ok: config.yaml, sub/mine.yaml (2 tasks)\n"
    (project / "config.yaml").write_text(
        dedent(CONFIG) + "paths:\n  tasks: sub/mine.yaml\n", encoding="utf-8"
    )
    by_config = validate("--offline")
    assert by_config.stdout == "ok: config.yaml, sub/mine.yaml (2 tasks)\n"


def test_help_documents_the_checks_and_flags():
    result = CliRunner().invoke(main, ["validate", "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    words = " ".join(result.output.split())  # help text is re-wrapped to the terminal width
    for text in (
        "--offline",
        "--config",
        "--tasks",
        "--command",
        "--url",
        "--header",
        "--from-mcp-json",
        "--server",
        "--phase1-provider",
        "FILE:LINE: message",
        "cannot be reached, a warning says the tool names were not checked",
    ):
        assert text in words, text


def test_shared_option_sets_make_the_effective_config_and_selection(project):
    """The decorators every pipeline command stacks, on a command of their own."""
    seen = {}

    @click.command()
    @config_options
    @server_options
    @provider_options
    @task_selection_options
    @click.pass_context
    def probe(ctx: click.Context, task_ids, tags, **_: object) -> None:
        config = effective_config(ctx)
        taskfile = load_tasks(tasks_file(ctx.params, config))
        seen["server"] = config.server
        seen["phase3"] = str(config.providers.phase3)
        seen["tasks"] = [task.task_id for task in select_tasks(taskfile, task_ids, tags)]

    args = ["--url", "http://127.0.0.1:9/mcp", "--header", "X-Key: abc", "--phase3-provider", "openai:gpt-4o"]
    result = CliRunner().invoke(probe, [*args, "--task", "add-numbers"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (seen["server"].name, seen["server"].url, seen["server"].headers) == (
        "127.0.0.1:9",
        "http://127.0.0.1:9/mcp",
        {"X-Key": "abc"},
    )
    assert (seen["phase3"], seen["tasks"]) == ("openai/gpt-4o", ["add-numbers"])

    unknown = CliRunner().invoke(probe, ["--tag", "nope"], catch_exceptions=False)
    assert (unknown.exit_code, unknown.stderr) == (2, "Error: no task has tag(s): nope (tags in use: none)\n")
