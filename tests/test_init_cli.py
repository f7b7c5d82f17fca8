"""`mcpipechekr init`: commented files for each server source, secrets kept out, no silent overwrite."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import pytest
import yaml
from click.testing import CliRunner
from fakes.packaged_server import venv_purelib

from mcpipechekr._util.commands import script_command
from mcpipechekr.cli import main
from mcpipechekr.cli.init_cmd import DODO_TEMPLATE
from mcpipechekr.config import load_config
from mcpipechekr.tasks import TASKS_TEMPLATE, load_tasks, refuse_untouched_example

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
FIXING_OFF = (
    "fixing is off (fix.agent: none): the loop evaluates the server and fixes nothing; "
    "config.yaml's fix section says how to turn it on"
)


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
    mcpipechekr = script_command("mcpipechekr")
    assert result.stdout == (
        "wrote proj/config.yaml\n"
        "wrote proj/tasks.yaml\n"
        "wrote proj/dodo.py\n"
        "wrote proj/.gitignore\n"
        f"{FIXING_OFF}\n"
        f"next: `{mcpipechekr} tasks propose --config proj/config.yaml` drafts verified tasks, "
        f"then `{mcpipechekr} doit --dir proj baseline loop`\n"
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
        "proj/tasks.yaml:25: task 'example-task' field 'expected_tool': the server has no tool 'search' "
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
        "health": {"timeout_s": 60, "min_tools": 1},
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
        "health": {"timeout_s": 60, "min_tools": 1},
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


def test_the_next_line_names_the_commands_as_typed_from_here(workdir):
    mcpipechekr, doit = script_command("mcpipechekr"), script_command("doit")
    here = run("init", "--command", "python server.py")
    assert here.stdout.splitlines()[-1] == (
        f"next: `{mcpipechekr} tasks propose` drafts verified tasks, then `{doit} baseline loop`"
    )
    assert (workdir / "tasks.yaml").read_text(encoding="utf-8") == TASKS_TEMPLATE

    (workdir / "dodo.py").write_text("def task_hello():\n    return {'actions': ['echo hi']}\n")
    kept = run("init", "--command", "python server.py", "--force")
    assert kept.stdout.splitlines()[-1] == (
        f"next: `{mcpipechekr} tasks propose` drafts verified tasks, then `{mcpipechekr} doit baseline loop`"
    )


def test_init_names_the_server_after_the_program_env_runs(workdir):
    result = run("init", "--command", "env A=1 B=2 my-server --flag")
    assert result.exit_code == 0, result.output
    server = yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))["server"]
    assert server["name"] == "my-server"
    assert (server["command"], server["args"]) == ("env", ["A=1", "B=2", "my-server", "--flag"])
    assert load_config("config.yaml", environ={}).server.name == "my-server"
    validate_offline(".")


def test_init_env_settings_stay_literal_and_secrets_go_to_dotenv(workdir):
    (workdir / "srv").mkdir()
    (workdir / "srv" / "server.py").write_text(textwrap.dedent(PROBE_SERVER), encoding="utf-8")
    result = run(
        "init",
        "--dir",
        "proj",
        "--command",
        "python server.py",
        "--cwd",
        "srv",
        "--env",
        "HOME=/tmp/notes home",
        "--env",
        "LOG_LEVEL=${LOG_LEVEL:-info}",
        "--env",
        f"NOTES_API_KEY={SECRET}",
        "--env",
        "EMPTY=",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:6] == [
        "wrote proj/config.yaml",
        "wrote proj/tasks.yaml",
        "wrote proj/dodo.py",
        "wrote proj/.gitignore",
        "wrote proj/.env",
        "secrets in proj/.env, not in config.yaml, which reads them as ${NOTES_API_KEY}",
    ]
    text = (workdir / "proj" / "config.yaml").read_text(encoding="utf-8")
    assert SECRET not in text
    server = yaml.safe_load(text)["server"]
    assert server["env"] == {
        "HOME": "/tmp/notes home",
        "LOG_LEVEL": "${LOG_LEVEL:-info}",
        "NOTES_API_KEY": "${NOTES_API_KEY}",
        "EMPTY": "",
    }
    assert (server["name"], server["cwd"]) == ("srv", "../srv")  # `server.py` says nothing: its folder does
    dotenv = workdir / "proj" / ".env"
    assert dotenv.read_text(encoding="utf-8") == f"NOTES_API_KEY='{SECRET}'\n"
    assert stat.S_IMODE(dotenv.stat().st_mode) == 0o600

    config = load_config(workdir / "proj" / "config.yaml", environ={})
    assert config.server.env == {
        "HOME": "/tmp/notes home",
        "LOG_LEVEL": "info",
        "NOTES_API_KEY": SECRET,
        "EMPTY": "",
    }
    assert config.server.cwd == str(workdir / "srv")
    validate_offline("proj")  # which finds server.py in the --cwd folder


def test_init_env_and_cwd_override_an_mcp_json_entry(workdir):
    (workdir / "srv").mkdir()
    (workdir / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": "notes-mcp",
                        "cwd": ".",
                        "env": {"HOME": "/from-json", "NOTES_TOKEN": SECRET},
                    },
                    "web": {"url": "http://127.0.0.1:1/mcp"},
                }
            }
        ),
        encoding="utf-8",
    )
    result = run(
        "init", "--from-mcp-json", "mcp.json", "--server", "notes", "--env", "HOME=/from-flag", "--cwd", "srv"
    )
    assert result.exit_code == 0, result.output
    server = yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))["server"]
    assert (server["name"], server["cwd"]) == ("notes", "srv")
    assert server["env"] == {"HOME": "/from-flag", "NOTES_TOKEN": "${NOTES_TOKEN}"}
    assert (workdir / ".env").read_text(encoding="utf-8") == f"NOTES_TOKEN='{SECRET}'\n"

    web = run("init", "--from-mcp-json", "mcp.json", "--server", "web", "--env", "A=1", "--force")
    assert (web.exit_code, web.stderr) == (
        2,
        "Error: --env applies to a stdio server, and 'web' in mcp.json is reached by URL: leave it out, "
        "or choose an entry with `command`\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--url", "http://127.0.0.1:1/mcp", "--env", "A=1", "--cwd", "."],
            "--env and --cwd apply to a stdio server (--command), not to --url: a server reached by URL is "
            "started elsewhere, so set its environment and folder where it is started",
        ),
        (
            ["--env", "A=1"],
            "--env applies to the server of --command or --from-mcp-json: give one, or set server.env / "
            "server.cwd in config.yaml",
        ),
        (
            ["--command", "notes-mcp", "--env", "1A=b"],
            "--env must be NAME=VALUE with NAME made of letters, digits and '_' "
            "(e.g. --env HOME=/tmp/notes-home); got '1A=b'",
        ),
        (
            ["--command", "notes-mcp", "--cwd", "missing"],
            "--cwd missing: no such folder; give the folder the server runs in",
        ),
    ],
)
def test_init_refuses_env_and_cwd_where_they_mean_nothing(workdir, args, message):
    result = run("init", *args)
    assert (result.exit_code, result.stderr) == (2, f"Error: {message}\n")
    assert not (workdir / "config.yaml").exists()


def test_fixing_is_off_by_default_and_an_agent_is_told_what_it_needs(workdir):
    run("init", "--command", "python server.py")
    text = (workdir / "config.yaml").read_text(encoding="utf-8")
    assert "\nfix:\n  agent: none\n" in text
    assert (
        "# `agent: none`: the loop evaluates (lint, traces, bug report, review) and fixes nothing. To fix:\n"
        "#   - set server.repo to the git checkout of the server's source\n"
        "#   - set `agent: opencode` (or claude-code, codex, aider)\n"
        "#   - set providers.phase3 to the agent's model, e.g. `phase3: anthropic/claude-sonnet-4-6`\n"
    ) in text
    assert load_config("config.yaml", environ={}).fixing_off().startswith("server.repo is not set")

    agent = run("init", "--command", "python server.py", "--fix-agent", "opencode", "--force")
    assert agent.exit_code == 0, agent.output
    assert agent.stdout.splitlines()[-3:-1] == [
        "fix.agent opencode needs a model: set providers.phase3 in config.yaml to provider/model "
        "(e.g. anthropic/claude-sonnet-4-6), its key in .env",
        "server.repo is not set: until it names the git checkout of the server's source, the loop "
        "evaluates and fixes nothing",
    ]
    config = load_config("config.yaml", environ={})
    assert config.fix.agent == "opencode"
    assert config.fixing_off() is not None and config.fixing_off().startswith("server.repo is not set")

    shell = run("init", "--command", "python server.py", "--fix-agent", "shell", "--force")
    assert shell.exit_code == 2 and "'shell' is not one of" in shell.stderr


# --- server.repo: the checkout that tracks the file the command runs ----------------------------------


def commit(folder: Path, files: dict[str, str], ignore: str = "") -> git.Repo:
    """A git repository in `folder` with `files` committed (and a .gitignore when `ignore` is given)."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    if ignore:
        (folder / ".gitignore").write_text(ignore, encoding="utf-8")
    repo = git.Repo.init(folder)
    repo.index.add([*files, *([".gitignore"] if ignore else [])])
    repo.index.commit("server")
    return repo


def repo_of(folder: Path) -> str | None:
    return yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))["server"].get("repo")


def test_init_sets_repo_to_the_checkout_that_tracks_the_script(workdir):
    (workdir / "server").mkdir()
    commit(workdir / "server", {"server.py": textwrap.dedent(PROBE_SERVER)})
    result = run("init", "--dir", "eval", "--command", "python server/server.py")
    assert result.exit_code == 0, result.output
    assert "server.repo: ../server, the git checkout that tracks server.py" in result.stdout.splitlines()
    assert repo_of(workdir / "eval") == "../server"
    assert "  # The git checkout of the server's source" in (workdir / "eval" / "config.yaml").read_text()
    config = load_config(workdir / "eval" / "config.yaml", environ={})
    assert config.server.repo == str(workdir / "server")
    assert config.fixing_off() == "fix.agent is `none`"  # the checkout alone does not turn fixing on
    validate_offline("eval")

    # an untracked script, in the same checkout, is not the checkout's source
    (workdir / "server" / "draft.py").write_text(textwrap.dedent(PROBE_SERVER), encoding="utf-8")
    untracked = run("init", "--dir", "eval", "--command", "python server/draft.py", "--force")
    assert untracked.exit_code == 0
    assert repo_of(workdir / "eval") is None
    assert not any(line.startswith("server.repo:") for line in untracked.stdout.splitlines())


def test_a_script_under_site_packages_is_never_the_servers_checkout(workdir):
    (workdir / "vendored").mkdir()
    inside = "lib/python3.11/site-packages/notes/server.py"
    commit(workdir / "vendored", {inside: textwrap.dedent(PROBE_SERVER)})
    result = run("init", "--command", f"python vendored/{inside}")
    assert result.exit_code == 0, result.output
    assert (repo_of(workdir), yaml.safe_load((workdir / "config.yaml").read_text())["server"]["name"]) == (
        None,
        "notes",
    )


def test_a_console_script_counts_through_its_module_only_when_installed_editable(workdir):
    checkout = workdir / "notes"
    checkout.mkdir()
    server_code = textwrap.dedent(PROBE_SERVER).replace('if __name__ == "__main__":\n    app.run()', "")
    module = server_code + "\n\ndef main() -> None:\n    app.run()\n"
    commit(checkout, {"notes_pkg/__init__.py": "", "notes_pkg/server.py": module}, ignore=".venv/\n")
    # a virtual environment inside the checkout, ignored by git, with a console script as pip writes one
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True)
    python = checkout / ".venv" / "bin" / "python"
    purelib = venv_purelib(python)
    script = checkout / ".venv" / "bin" / "notes-mcp"
    script.write_text(
        f"#!{python}\nimport sys\nfrom notes_pkg.server import main\nif __name__ == '__main__':\n"
        "    sys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)

    # installed as a copy into site-packages: the checkout does not run, so it is not the source
    shutil.copytree(checkout / "notes_pkg", Path(purelib) / "notes_pkg")
    copied = run("init", "--command", str(script))
    assert copied.exit_code == 0, copied.output
    assert repo_of(workdir) is None
    assert yaml.safe_load((workdir / "config.yaml").read_text())["server"]["name"] == "notes-mcp"

    # installed editable (a path in a .pth file): the module is the checkout's tracked file
    shutil.rmtree(Path(purelib) / "notes_pkg")
    (Path(purelib) / "notes_pkg.pth").write_text(f"{checkout}\n", encoding="utf-8")
    editable = run("init", "--command", str(script), "--force")
    assert editable.exit_code == 0, editable.output
    assert repo_of(workdir) == "notes"
    assert "server.repo: notes, the git checkout that tracks notes_pkg/server.py" in editable.stdout


def test_the_example_tasks_are_never_baselined_or_traced_and_the_refusal_says_what_to_type(workdir):
    """init's one task is a placeholder: every figure made from it would be noise."""
    (workdir / "server.py").write_text(textwrap.dedent(PROBE_SERVER), encoding="utf-8")
    assert run("init", "--command", "python server.py").exit_code == 0
    refused = CliRunner().invoke(main, ["baseline"])
    assert refused.exit_code == 2
    said = " ".join(refused.output.split())
    assert "tasks.yaml still holds only the example task" in said
    assert "mcpipechekr tasks propose`" in said
    assert not (workdir / "runs" / "baseline.json").exists()
    # Once the user has touched the file, it is theirs.
    (workdir / "tasks.yaml").write_text((workdir / "tasks.yaml").read_text() + "\n# edited\n")
    refuse_untouched_example(workdir / "tasks.yaml")
