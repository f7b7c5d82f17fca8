"""`mcpipechekr init`: commented files for each server source, secrets kept out, no silent overwrite."""

from __future__ import annotations

import json
import stat
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr._util.commands import script_command
from mcpipechekr.cli import main
from mcpipechekr.cli.init_cmd import DODO_TEMPLATE
from mcpipechekr.config import load_config
from mcpipechekr.tasks import load_tasks

PROBE_SERVER = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("probe")


@app.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    app.run()
"""

SECRET = "tok-9d2f61c0a7e4"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def validate_offline(folder: str):
    """The written files pass `validate --offline`."""
    config, tasks = (str(Path(folder) / name) for name in ("config.yaml", "tasks.yaml"))
    result = run("validate", "--offline", "--config", config)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == f"ok: {config}, {tasks} (1 task)\n"


def test_init_from_a_command_writes_files_that_reach_the_server(workdir):
    (workdir / "server.py").write_text(textwrap.dedent(PROBE_SERVER), encoding="utf-8")
    result = run("init", "--dir", "proj", "--command", "python server.py --verbose")
    assert result.exit_code == 0
    assert result.stdout == (
        "wrote proj/config.yaml\n"
        "wrote proj/tasks.yaml\n"
        "wrote proj/dodo.py\n"
        "wrote proj/.gitignore\n"
        f"next: edit proj/tasks.yaml, then run `{script_command('mcpipechekr')} validate`\n"
    )
    assert (workdir / "proj" / "dodo.py").read_text() == DODO_TEMPLATE
    assert (workdir / "proj" / ".gitignore").read_text() == "runs/\n.mcpipechekr/\n.env\n"
    text = (workdir / "proj" / "config.yaml").read_text(encoding="utf-8")
    assert "  command: python\n  args: [server.py, --verbose]\n" in text
    assert "# stdio: the command that starts the server." in text  # the file explains itself
    assert "\nproviders:\n  phase0: demo" in text
    validate_offline("proj")

    config = load_config(workdir / "proj" / "config.yaml", environ={})
    assert (config.server.name, config.server.cwd) == ("proj", str(workdir))  # cwd: where init was run
    tasks = load_tasks(workdir / "proj" / "tasks.yaml")
    assert tasks.task_ids() == ["example-task"]
    # the commented fix.test_command is a working setting once uncommented
    (workdir / "proj" / "config.yaml").write_text(text.replace("  # test_command: ", "  test_command: "))
    enabled = load_config(workdir / "proj" / "config.yaml", environ={})
    assert enabled.fix.test_command == "{python} -m pytest -q"
    (workdir / "proj" / "config.yaml").write_text(text)

    # The written server section really reaches the server: a task naming a missing tool is caught.
    task_text = (workdir / "proj" / "tasks.yaml").read_text(encoding="utf-8")
    (workdir / "proj" / "tasks.yaml").write_text(
        task_text.replace("    # expected_tool: search\n", "    expected_tool: search\n"), encoding="utf-8"
    )
    checked = run("validate", "--config", "proj/config.yaml")
    assert checked.exit_code == 2
    assert checked.stderr == (
        "proj/tasks.yaml:24: task 'example-task' field 'expected_tool': the server has no tool 'search' "
        "(tools: echo)\n"
    )


def test_init_from_a_url_keeps_the_header_secret_out_of_config(workdir):
    result = run(
        "init",
        "--url",
        "http://127.0.0.1:8765/mcp",
        "--header",
        f"Authorization: Bearer {SECRET}",
        "--name",
        "remote",
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:5] == [
        "wrote config.yaml",
        "wrote tasks.yaml",
        "wrote dodo.py",
        "wrote .gitignore",
        "wrote .env",
    ]
    config_text = (workdir / "config.yaml").read_text(encoding="utf-8")
    assert SECRET not in config_text
    assert yaml.safe_load(config_text)["server"] == {
        "name": "remote",
        "url": "http://127.0.0.1:8765/mcp",
        "headers": {"Authorization": "${MCP_HEADER_AUTHORIZATION}"},
        "health": {"timeout_s": 30, "min_tools": 1},
    }
    dotenv = workdir / ".env"
    assert dotenv.read_text(encoding="utf-8") == f"MCP_HEADER_AUTHORIZATION='Bearer {SECRET}'\n"
    assert stat.S_IMODE(dotenv.stat().st_mode) == 0o600

    config = load_config("config.yaml", environ={})
    assert config.server.headers == {"Authorization": f"Bearer {SECRET}"}
    assert config.redacted_dump()["server"]["headers"] == {"Authorization": "${MCP_HEADER_AUTHORIZATION}"}
    validate_offline(".")


def test_init_from_mcp_json(workdir):
    (workdir / "clients").mkdir()
    (workdir / "clients" / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {
                        "command": "npx",
                        "args": ["-y", "@example/github-mcp", "--read-only"],
                        "env": {"GITHUB_TOKEN": SECRET, "LOG_LEVEL": "${LOG_LEVEL:-info}"},
                    },
                    "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
                }
            }
        ),
        encoding="utf-8",
    )
    (workdir / "out").mkdir()
    (workdir / "out" / ".env").write_text("GITHUB_TOKEN=already-here\n", encoding="utf-8")
    result = run("init", "--dir", "out", "--from-mcp-json", "clients/mcp.json", "--server", "github")
    assert result.exit_code == 0
    assert result.stderr == "kept GITHUB_TOKEN already in out/.env\n"
    server = yaml.safe_load((workdir / "out" / "config.yaml").read_text(encoding="utf-8"))["server"]
    assert server == {
        "name": "github",
        "command": "npx",
        "args": ["-y", "@example/github-mcp", "--read-only"],
        "cwd": "..",
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG_LEVEL": "${LOG_LEVEL:-info}"},
        "health": {"timeout_s": 30, "min_tools": 1},
    }
    assert (workdir / "out" / ".env").read_text(encoding="utf-8") == "GITHUB_TOKEN=already-here\n"
    validate_offline("out")

    remote = run("init", "--dir", "web", "--from-mcp-json", "clients/mcp.json", "--server", "remote")
    assert remote.exit_code == 0
    assert yaml.safe_load((workdir / "web" / "config.yaml").read_text(encoding="utf-8"))["server"]["url"] == (
        "https://mcp.example.com/mcp"
    )
    validate_offline("web")

    unknown = run("init", "--from-mcp-json", "clients/mcp.json", "--server", "gitlab")
    assert unknown.exit_code == 2
    assert unknown.stderr == "Error: clients/mcp.json: no server 'gitlab' (servers: github, remote)\n"


def test_init_refuses_to_overwrite_without_force(workdir):
    (workdir / "config.yaml").write_text("# mine\n", encoding="utf-8")
    result = run("init", "--command", "python server.py")
    assert result.exit_code == 2
    assert result.stderr == "Error: config.yaml already exists: pass --force to overwrite\n"
    assert (workdir / "config.yaml").read_text(encoding="utf-8") == "# mine\n"
    assert not (workdir / "tasks.yaml").exists()

    (workdir / "tasks.yaml").write_text("# mine too\n", encoding="utf-8")
    both = run("init", "--command", "python server.py")
    assert both.stderr == "Error: config.yaml and tasks.yaml already exist: pass --force to overwrite\n"

    # validate checks that the script the command names is there
    (workdir / "server.py").write_text(textwrap.dedent(PROBE_SERVER), encoding="utf-8")
    forced = run("init", "--command", "python server.py", "--force")
    assert forced.exit_code == 0
    assert "command: python" in (workdir / "config.yaml").read_text(encoding="utf-8")
    validate_offline(".")


def test_the_checkouts_dodo_is_the_one_init_writes():
    assert (Path(__file__).parents[1] / "dodo.py").read_text() == DODO_TEMPLATE


def test_init_keeps_a_dodo_and_ignores_of_ones_own(workdir):
    (workdir / "dodo.py").write_text("def task_hello():\n    return {'actions': ['echo hi']}\n")
    (workdir / ".gitignore").write_text("*.pyc\n.env")
    result = run("init", "--command", "python server.py")
    assert result.exit_code == 0
    assert "wrote dodo.py" not in result.stdout
    assert result.stderr == (
        f"kept dodo.py: it is not MCPipeChekr's; `{script_command('mcpipechekr')} doit …` needs none\n"
    )
    assert (workdir / "dodo.py").read_text().startswith("def task_hello")
    assert (workdir / ".gitignore").read_text() == "*.pyc\n.env\nruns/\n.mcpipechekr/\n"

    again = run("init", "--command", "python server.py", "--force")
    assert "wrote .gitignore" not in again.stdout  # nothing left to add


def test_init_needs_exactly_one_server_source(workdir):
    none = run("init")
    assert (none.exit_code, none.stderr) == (
        2,
        "Error: init needs a server: give --command, --url or --from-mcp-json\n",
    )
    both = run("init", "--command", "python s.py", "--from-mcp-json", "m.json")
    assert (both.exit_code, both.stderr) == (
        2,
        "Error: --command and --from-mcp-json are mutually exclusive: give one way to reach the server\n",
    )
    assert not (Path(workdir) / "config.yaml").exists()
