"""Preflight: what would stop a later step, reported by `validate` (file:line) and at the loop's start.

`validate` runs through click's CliRunner with --offline (nothing is started);
the server files are copies of tests/servers/tiny_server.py.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import git
import pytest
from click.testing import CliRunner

from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.preflight import LOOP_PHASES, check_preflight, loop_phases, preflight_problems
from mcpipechekr.providers import provider_env_names

TINY = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
TASKS = """
tasks:
  - task_id: echo-hello
    prompt: Say hello back to me.
    task_type: deterministic
    expected_result: hello
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with server.py and tasks.yaml (config.yaml is each test's), the current folder; no keys."""
    for name in provider_env_names():
        monkeypatch.delenv(name, raising=False)
    shutil.copy(TINY, tmp_path / "server.py")
    (tmp_path / "tasks.yaml").write_text(textwrap.dedent(TASKS).lstrip(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(folder: Path, text: str) -> Path:
    path = folder / "config.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def validate(*args: str):
    return CliRunner().invoke(main, ["validate", "--offline", *args], catch_exceptions=False)


STDIO = """
server:
  name: tiny
  command: python
  args: [server.py]
  cwd: .
"""

NO_REPO = (
    "field 'server.repo': is not set, and the `fix` step commits each fix in the server's git repository: "
    "set server.repo in config.yaml to the server's checkout (relative to config.yaml's folder)"
)


# --- the fix step's repository ---------------------------------------------------------------------


def test_a_fix_step_without_a_repository_is_reported_with_its_line(project: Path) -> None:
    write_config(project, STDIO + "fix:\n  agent: demo\n")
    result = validate()
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [f"config.yaml:1: {NO_REPO}"]

    git.Repo.init(project / "checkout", initial_branch="main").close()
    write_config(project, STDIO + "  repo: checkout\nfix:\n  agent: demo\n")
    assert validate().stdout == "ok: config.yaml, tasks.yaml (1 task)\n"

    write_config(project, STDIO + "  repo: elsewhere\nfix:\n  agent: demo\n")
    assert validate().stderr.splitlines() == [
        "config.yaml:6: field 'server.repo': elsewhere is not a git repository, and the `fix` step commits "
        "each fix there: point server.repo at the server's checkout, or set server.repo_template to a folder "
        "to copy it from"
    ]


def test_a_config_not_set_up_for_fixing_passes_validate_but_not_the_loop(project: Path) -> None:
    """`init`'s config (fix.agent opencode, Phase 3 demo) is for check/lint/run; the loop needs more."""
    config = load_config(write_config(project, STDIO))
    assert preflight_problems(config) == []
    assert validate().exit_code == 0
    problems = [str(item) for item in preflight_problems(config, LOOP_PHASES) if item.severity == "error"]
    assert problems[0] == f"config.yaml:1: {NO_REPO}"
    assert problems[1] == (
        "config.yaml:1: field 'providers.phase3': is `demo`, and fix.agent `opencode` needs a model: set "
        "providers.phase3 to provider/model (e.g. anthropic/claude-sonnet-4-6) or pass --phase3-provider"
    )
    with pytest.raises(ConfigFileError) as info:
        check_preflight(config, LOOP_PHASES)
    assert info.value.problems[0].line == 1 and "server.repo" in info.value.message
    check_preflight(config, ("phase1", "phase2"))  # trace and evaluate need no repository


def test_without_a_repository_or_with_fix_agent_none_the_loop_only_evaluates(project: Path) -> None:
    """Nothing about Phase 3 stops a loop that cannot fix: a server installed from a package, or none."""
    config = load_config(write_config(project, STDIO))
    assert config.fixing_off() is not None and "server.repo is not set" in config.fixing_off()
    assert loop_phases(config) == ("phase05", "phase1", "phase2")
    check_preflight(config, loop_phases(config))

    git.Repo.init(project / "checkout", initial_branch="main").close()
    config = load_config(write_config(project, STDIO + "  repo: checkout\nfix:\n  agent: none\n"))
    assert config.fixing_off() == "fix.agent is `none`"
    check_preflight(config, loop_phases(config))
    assert validate().stdout == "ok: config.yaml, tasks.yaml (1 task)\n"

    # With a repository and a fix agent, fixing is on: a missing Phase 3 model is said, with its line.
    config = load_config(write_config(project, STDIO + "  repo: checkout\nfix:\n  agent: opencode\n"))
    assert config.fixing_off() is None and loop_phases(config) == LOOP_PHASES
    with pytest.raises(ConfigFileError, match=r"providers.phase3"):
        check_preflight(config, loop_phases(config))


# --- provider keys ---------------------------------------------------------------------------------


KEYED = """
providers:
  phase1: demo
  phase2: openai/gpt-4o
"""


def test_a_missing_key_is_reported_with_its_line_and_dotenv_supplies_it(project: Path) -> None:
    write_config(project, STDIO + KEYED)
    result = validate()
    assert (result.exit_code, result.stderr.splitlines()) == (
        2,
        [
            "config.yaml:9: field 'providers.phase2': `openai/gpt-4o` needs an API key in $OPENAI_API_KEY, "
            "which is neither exported nor in .env: export it, or add `OPENAI_API_KEY=...` to that .env "
            "(the `evaluate` step uses this provider)"
        ],
    )
    (project / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-55aa\n", encoding="utf-8")
    result = validate()
    assert (result.exit_code, result.stderr) == (0, "")


ENDPOINT = """
providers:
  endpoints:
    local:
      base_url: http://127.0.0.1:9/v1
      api_key_env: MCPC_LOCAL_KEY
"""


def test_an_endpoint_key_given_by_a_flag_names_the_flag(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPC_LOCAL_KEY", raising=False)
    write_config(project, STDIO + ENDPOINT)
    result = validate("--phase1-provider", "local/llama")
    assert (result.exit_code, result.stderr.splitlines()) == (
        2,
        [
            "--phase1-provider: field 'providers.phase1': `local/llama` needs an API key in $MCPC_LOCAL_KEY, "
            "which is neither exported nor in .env: export it, or add `MCPC_LOCAL_KEY=...` to that .env (the "
            "`trace` step uses this provider)"
        ],
    )
    monkeypatch.setenv("MCPC_LOCAL_KEY", "sk-local-exported-1234")
    assert validate("--phase1-provider", "local/llama").exit_code == 0


def test_a_cli_runner_makes_a_missing_phase1_key_a_warning(project: Path) -> None:
    write_config(project, STDIO + "providers:\n  phase1: anthropic/claude-sonnet-4-6\n")
    config = load_config(project / "config.yaml")
    (native,) = preflight_problems(config, ["phase1"])
    (cli,) = preflight_problems(config, ["phase1"], runner="claude-code")
    assert (native.severity, cli.severity) == ("error", "warning")
    assert str(cli).startswith("warning: config.yaml:7: field 'providers.phase1': ")
    assert str(cli).endswith("unless the claude-code runner has a login of its own")
    check_preflight(config, ["phase1"], runner="claude-code")  # printed, not raised


# --- launching the server --------------------------------------------------------------------------


HTTP = """
server:
  name: tiny
  url: http://127.0.0.1:8765/mcp
  start: python server.py --http 8765
"""


def test_a_start_command_without_the_cwd_it_needs(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(project, HTTP)
    assert validate().exit_code == 0  # started from config.yaml's folder, server.py is found

    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)  # as `doit loop` or `mcpipechekr run --config …` from another folder
    result = validate("--config", str(project / "config.yaml"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{project / 'config.yaml'}:4: field 'server.start.args[0]': 'server.py' is not in {elsewhere}, the "
        "folder MCPipeChekr was started from, where the start command runs without a `cwd`: set "
        "server.start.cwd to the folder that holds it (relative to config.yaml's folder); `cwd: .` would "
        "find it"
    ]

    write_config(project, HTTP.replace("  start: python server.py --http 8765\n", START_WITH_CWD))
    assert validate("--config", str(project / "config.yaml")).exit_code == 0


START_WITH_CWD = """\
  start:
    command: python
    args: [server.py, --http, "8765"]
    cwd: .
"""


def test_a_start_cwd_or_program_that_is_not_there(project: Path) -> None:
    start = START_WITH_CWD.replace("cwd: .", "cwd: srv")
    write_config(project, HTTP.replace("  start: python server.py --http 8765\n", start))
    assert validate().stderr.splitlines() == [
        "config.yaml:7: field 'server.start.cwd': folder srv does not exist, so the start command cannot run "
        "in it: point server.start.cwd at the server's folder (relative to config.yaml's folder)"
    ]
    write_config(project, HTTP.replace("python server.py", "mcpc-no-such-program-4711"))
    assert validate().stderr.splitlines() == [
        "config.yaml:4: field 'server.start.command': `mcpc-no-such-program-4711` is not on PATH, so the "
        "start command cannot be started: install it, or give its path"
    ]


@pytest.mark.parametrize(
    ("start", "problem"),
    [
        ("node dist/index.js --port 8765", "'dist/index.js' is not in"),
        ("./serve.sh", "'./serve.sh' is not in"),
        ("npx -y @acme/mcp-server --port 8765", None),  # a package, not a path
        ("sh -c 'python server.py --http 8765'", None),  # a shell snippet is not looked into
        ("python -m acme.server --http 8765", None),
        ("python server.py --db data/new.db", None),  # the server may create the file; its folder exists
    ],
)
def test_only_paths_are_looked_for(project: Path, start: str, problem: str | None) -> None:
    (project / "data").mkdir()
    write_config(project, HTTP.replace("python server.py --http 8765", start))
    found = preflight_problems(load_config(project / "config.yaml"))
    missing = [str(item) for item in found if "is not in" in str(item)]  # (`node` may not be on PATH here)
    if problem is None:
        assert missing == []
    else:
        assert len(missing) == 1 and problem in missing[0]


def test_the_bundled_config_has_no_preflight_problem() -> None:
    config = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
    assert preflight_problems(config) == []
    assert preflight_problems(config, LOOP_PHASES) == []
