"""Phase 3's parts on their own: prompt and promise, agent templates, the demo fixer, changed files."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import git
import pytest
from fakes.agent_cli import DEV_BIN

from mcpipechekr.artifacts import Bug
from mcpipechekr.config import Config, ConfigFileError, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.fix import PROMISE, TEMPLATES, FixAgent, build_fix_prompt, has_promise, resolve_agent
from mcpipechekr.fix.agents import FindingsServer
from mcpipechekr.fix.changes import Exclusions, changed_files, commit_paths, restore, snapshot
from mcpipechekr.fix.guards import AGENT_GIT_ENV

REPO = Path(__file__).resolve().parents[1]
EMAILINDEX = REPO / "examples" / "emailindex"


def bug(**changes: object) -> Bug:
    fields: dict[str, object] = {
        "id": "GAP-no-date-sort-query-email-database",
        "type": "feature_gap",
        "severity": "high",
        "source": "analyzer",
        "tool": "query_email_database",
        "trigger": "finding the earliest match by date with `query_email_database`",
        "observed": "the agent walked 4 date windows forward with `count_emails`",
        "expected": "one call that lists the matches oldest first",
        "acceptance_criteria": ["add a sort_order parameter (date_asc/date_desc) to query_email_database"],
        "token_cost_observed": 1300,
        "token_cost_optimal": 400,
        "token_cost_of_gap": 900,
        "occurrences": 2,
        "details": {"windows": ["..2012-12-31"]},
    }
    fields.update(changes)
    return Bug.model_validate(fields)


def config_with(tmp_path: Path, fix: str, providers: str = "") -> Config:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"server: {{command: python, args: [server.py]}}\n{providers}fix:\n{fix}", encoding="utf-8"
    )
    return load_config(path, environ={})


# --- the prompt and the promise ---------------------------------------------------------------------


def test_prompt_holds_the_bug_the_notes_and_the_criteria() -> None:
    prompt = build_fix_prompt(bug(), ["prefer a sort_order parameter"], server_name="emailindex")
    assert prompt.startswith("# Fix one defect in the MCP server `emailindex`")
    assert "- when: finding the earliest match by date with `query_email_database`" in prompt
    assert "- add a sort_order parameter (date_asc/date_desc) to query_email_database" in prompt
    assert "## Notes from the reviewer (follow them)\n\n- prefer a sort_order parameter" in prompt
    block = prompt.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert Bug.model_validate(json.loads(block)) == bug()
    assert "Do not commit" in prompt and PROMISE in prompt
    assert "Notes from the reviewer" not in build_fix_prompt(bug(), [], server_name="s")


def test_the_promise_counts_only_outside_an_echoed_prompt() -> None:
    prompt = build_fix_prompt(bug(), [], server_name="emailindex")
    echoed = "> " + prompt.replace("\n", "\n> ")  # the prompt quoted back, as some CLIs do
    assert not has_promise(prompt, prompt)
    assert not has_promise(echoed.replace("> ", ""), prompt)
    assert has_promise(prompt + "\nAll criteria met.\n" + PROMISE + "\n", prompt)
    assert has_promise(f"Done: sort_order added. {PROMISE}", prompt)
    assert not has_promise("<promise>DONE</promise>", prompt)


# --- agent templates --------------------------------------------------------------------------------


def test_builtin_templates_fill_model_prompt_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    stand_in = tmp_path / "agent-cli"
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    prompt_file = tmp_path / "bug.prompt.md"
    expected = {
        "opencode": ["run", "--auto", "-m", "anthropic/claude-sonnet-4-6", "PROMPT"],
        "claude-code": [
            "-p",
            "--permission-mode",
            "acceptEdits",
            "--no-session-persistence",
            "--model",
            "claude-sonnet-4-6",
            "PROMPT",
        ],
        "codex": ["exec", "--sandbox", "workspace-write", "--ephemeral", "-m", "claude-sonnet-4-6", "PROMPT"],
        "aider": [
            "--yes-always",
            "--no-auto-commits",
            "--no-dirty-commits",
            "--no-gitignore",
            "--no-check-update",
            "--no-suggest-shell-commands",
            "--message-file",
            str(prompt_file),
            "--model",
            "anthropic/claude-sonnet-4-6",
        ],
    }
    for name in ("MCPIPECHEKR_OPENCODE", "MCPIPECHEKR_CLAUDE", "MCPIPECHEKR_CODEX", "MCPIPECHEKR_AIDER"):
        monkeypatch.setenv(name, str(stand_in))
    providers = "providers: {phase3: anthropic/claude-sonnet-4-6}\n"
    for name, args in expected.items():
        agent = resolve_agent(config_with(tmp_path, f"  agent: {name}\n", providers), tmp_path)
        assert agent.command("PROMPT", prompt_file, "GAP-x") == [str(stand_in), *args]
        assert "PROMPT" not in agent.display(prompt_file, "GAP-x")
    assert TEMPLATES["aider"].scratch == (".aider*",)


def test_an_endpoint_reaches_opencode_as_a_config_file_and_claude_code_as_its_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = tmp_path / "agent-cli"  # prints what it was handed: the config file and the variables
    stand_in.write_text(
        '#!/bin/sh\ncat "${OPENCODE_CONFIG:-/dev/null}"\n'
        'echo "base=${ANTHROPIC_BASE_URL:-} key=${ANTHROPIC_API_KEY:-}"\n'
        'echo "git=${GIT_ALLOW_PROTOCOL:-} pwd=$PWD"\n'
    )
    stand_in.chmod(0o755)
    monkeypatch.setenv("MCPIPECHEKR_OPENCODE", str(stand_in))
    monkeypatch.setenv("MCPIPECHEKR_CLAUDE", str(stand_in))
    monkeypatch.delenv("OPENCODE_CONFIG", raising=False)
    path = tmp_path / "config.yaml"
    fix_folder = tmp_path / "run" / "fix"
    fix_folder.mkdir(parents=True)
    prompt_file = fix_folder / "GAP-x.prompt.md"

    def run(agent_name: str) -> str:
        path.write_text(
            "server: {command: python, args: [server.py]}\n"
            "providers: {phase3: gw/small, endpoints: {gw: {base_url: 'http://127.0.0.1:9/v1', "
            "api_key_env: GW_KEY}}}\n"
            f"fix: {{agent: {agent_name}}}\n",
            encoding="utf-8",
        )
        config = load_config(path, environ={"GW_KEY": "sk-gw-secret"})
        result = resolve_agent(config, tmp_path).run("PROMPT", prompt_file, "GAP-x")
        assert result.exit_code == 0, result.stderr
        return result.stdout

    opencode = run("opencode")
    written = json.loads((fix_folder / "opencode.config.json").read_text())
    assert json.loads(opencode.rsplit("base=", 1)[0]) == written
    # confined: nothing outside the repository, no push, and git's transports off, in the repository
    permission = {"external_directory": "deny", "bash": {"*": "allow", "git push*": "deny"}}
    assert written["permission"] == permission
    assert opencode.splitlines()[-1] == f"git={AGENT_GIT_ENV['GIT_ALLOW_PROTOCOL']} pwd={tmp_path}"
    assert written["provider"] == {
        "gw": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "gw",
            "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:GW_KEY}"},
            "models": {"small": {"name": "small"}},
        }
    }
    assert "sk-gw-secret" not in (fix_folder / "opencode.config.json").read_text()
    assert run("claude-code").splitlines()[0] == "base=http://127.0.0.1:9 key=sk-gw-secret"
    assert not (fix_folder / "claude-code.config.json").exists()


def test_an_agent_that_needs_a_model_refuses_the_demo_provider(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="fix.agent `claude-code` needs a model.*--phase3-provider"):
        resolve_agent(config_with(tmp_path, "  agent: claude-code\n"), tmp_path)
    with pytest.raises(UserError, match="fix.agent `shell` needs a model"):
        resolve_agent(config_with(tmp_path, "  agent: shell\n  command: run --model {model}\n"), tmp_path)
    shell = resolve_agent(config_with(tmp_path, "  agent: shell\n  command: run {prompt_file}\n"), tmp_path)
    assert shell.provider is None


def test_a_missing_agent_cli_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPIPECHEKR_CODEX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    config = config_with(tmp_path, "  agent: codex\n", "providers: {phase3: openai/gpt-5}\n")
    with pytest.raises(
        UserError, match=r"`codex` was not found on PATH\. Install it \(npm install -g @openai/codex\)"
    ):
        resolve_agent(config, tmp_path)


def test_shell_command_placeholders_are_checked_when_the_config_is_read(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigFileError, match=r"config.yaml:4: field 'fix.command': unknown placeholder\(s\) \{promt\}"
    ):
        config_with(tmp_path, "  agent: shell\n  command: agent {promt}\n")
    with pytest.raises(ConfigFileError, match="`agent: shell` needs `command`"):
        config_with(tmp_path, "  agent: shell\n")
    with pytest.raises(ConfigFileError, match="`command` is only used with `agent: shell`"):
        config_with(tmp_path, "  agent: aider\n  command: aider {prompt}\n")


def test_shell_agent_gets_the_prompt_verbatim_and_runs_in_the_repository(tmp_path: Path) -> None:
    script = "import os, sys; print(os.getcwd()); print(sys.argv[1]); print(open(sys.argv[2]).read())"
    (tmp_path / "echo.py").write_text(script)
    command = "{python} echo.py {prompt} {prompt_file} && echo {bug_id} > {{out}}.txt"
    agent = resolve_agent(config_with(tmp_path, f"  agent: shell\n  command: '{command}'\n"), tmp_path)
    prompt = 'it\'s "quoted", $HOME `date` ; rm -rf nothing\nsecond line'
    prompt_file = tmp_path / "p.md"
    prompt_file.write_text("from the file")
    result = agent.run(prompt, prompt_file, "BUG-x")
    assert result.exit_code == 0 and not result.timed_out
    assert result.stdout == f"{tmp_path}\n{prompt}\nfrom the file"
    assert (tmp_path / "{out}.txt").read_text() == "BUG-x\n"


def test_a_stalled_agent_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    config = config_with(tmp_path, "  agent: shell\n  command: echo started; sleep 30\n  timeout_s: 0.5\n")
    result = resolve_agent(config, tmp_path).run("p", tmp_path / "p.md", "BUG-x")
    assert result.timed_out and result.stdout == "started" and result.elapsed_s < 10


@pytest.mark.parametrize(
    ("program", "argv", "flags"),
    [
        ("opencode", ["run", "--help"], ["--auto", "--model", "[message..]"]),
        ("claude", ["--help"], ["--permission-mode", "acceptEdits", "--no-session-persistence", "--model"]),
    ],
)
def test_installed_agent_clis_take_the_template_flags(
    program: str, argv: list[str], flags: list[str]
) -> None:
    binary = DEV_BIN / program
    if not binary.exists():
        pytest.skip(f"{program} is not installed under .cache/agents")
    shown = subprocess.run([str(binary), *argv], capture_output=True, text=True, timeout=60)
    text = shown.stdout + shown.stderr
    assert [flag for flag in flags if flag not in text] == []


# --- the demo fixer ---------------------------------------------------------------------------------


def demo_fixer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_fixer", EMAILINDEX / "demo_fixer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_demo_fixer_picks_the_patch_by_tool_type_and_the_bugs_own_words() -> None:
    fixer = demo_fixer()
    index = json.loads((EMAILINDEX / "fixes" / "index.json").read_text())
    pick = fixer.pick_patch
    assert pick(bug().model_dump(mode="json"), index)["patch"] == "0001-add-sort-order.patch"
    fts = bug(
        id="BUG-no-such-column-fts-rank-query-email-database",
        type="bug",
        trigger="calling `query_email_database` with fields and keywords",
        observed="error: database error: no such column: fts.rank",
        details={},
    )
    assert pick(fts.model_dump(mode="json"), index)["patch"] == "0002-fix-fts-rank-projection.patch"
    oversized = bug(id="EFF-oversized-result-query-email-database", type="efficiency", details={})
    assert pick(oversized.model_dump(mode="json"), index) is None  # same words, but no efficiency patch
    other_tool = bug(tool="get_email")
    assert pick(other_tool.model_dump(mode="json"), index) is None

    # the reviewer's note mentions sorting, but the bug entry decides
    prompt = build_fix_prompt(oversized, ["prefer a sort_order parameter"], server_name="emailindex")
    assert fixer.bug_entry(prompt)["id"] == oversized.id
    assert fixer.bug_entry("no json here") is None


def test_demo_fixer_applies_once_then_reports_nothing_to_change(tmp_path: Path) -> None:
    shutil.copytree(EMAILINDEX, tmp_path / "server", ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    root = tmp_path / "server"
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text(build_fix_prompt(bug(), [], server_name="emailindex"))
    run = [sys.executable, "demo_fixer.py", str(prompt_file)]
    first = subprocess.run(run, cwd=root, capture_output=True, text=True, check=True)
    assert (
        first.stdout.splitlines()[-1] == PROMISE and "applied fixes/0001-add-sort-order.patch" in first.stdout
    )
    assert "sort_order" in (root / "server.py").read_text()
    second = subprocess.run(run, cwd=root, capture_output=True, text=True, check=True)
    assert "already applied" in second.stdout and PROMISE not in second.stdout


# --- which files count as the agent's ------------------------------------------------------------------


def make_repo(root: Path) -> git.Repo:
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "Maintainer")
        cfg.set_value("user", "email", "maintainer@example.org")
    (root / "server.py").write_text("print('v1')\n")
    (root / "old.py").write_text("gone soon\n")
    (root / ".gitignore").write_text("*.db\n")
    repo.git.add(A=True)
    repo.index.commit("initial")
    return repo


def test_changes_leave_out_the_harness_folders_ignored_and_excluded_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    repo = make_repo(root)
    (root / "notes.txt").write_text("mine\n")
    (root / "keep.txt").write_text("mine too\n")
    before = snapshot(repo)
    # what the agent does
    (root / "server.py").write_text("print('v2')\n")
    (root / "old.py").unlink()
    (root / "lib").mkdir()
    (root / "lib" / "helper.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("rewritten by the agent\n")
    (root / "keep.txt").unlink()
    (root / "archive.db").write_text("ignored")
    (root / ".aider.chat.history.md").write_text("scratch")
    (root / "runs" / "run-20261202-001").mkdir(parents=True)
    (root / "runs" / "run-20261202-001" / "fix.json").write_text("{}")
    exclusions = Exclusions.build(root, [".aider*"], [root / "runs", tmp_path / "elsewhere"])
    assert exclusions.folders == ("runs",)

    changes = changed_files(repo, before, exclusions)
    assert changes.paths == ["lib/helper.py", "notes.txt", "old.py", "server.py"]
    assert changes.rewritten_untracked == ["keep.txt", "notes.txt"]

    sha = commit_paths(repo, ["lib/helper.py", "old.py", "server.py"], "fix: BUG-x")
    commit = repo.commit(sha)
    assert sorted(commit.stats.files) == ["lib/helper.py", "old.py", "server.py"]
    assert commit.author.name == "Maintainer" and commit.message == "fix: BUG-x"
    assert (
        "notes.txt" not in repo.git.ls_files() and "runs/run-20261202-001/fix.json" not in repo.git.ls_files()
    )


def test_restore_undoes_the_agents_edits_and_new_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    repo = make_repo(root)
    before = snapshot(repo)
    (root / "server.py").write_text("print('broken')\n")
    (root / "old.py").unlink()
    (root / "lib" / "deep").mkdir(parents=True)
    (root / "lib" / "deep" / "new.py").write_text("x = 1\n")
    repo.git.add("lib")  # staged by the agent
    changes = changed_files(repo, before, Exclusions())
    restore(repo, before, changes)
    assert (root / "server.py").read_text() == "print('v1')\n" and (root / "old.py").exists()
    assert not (root / "lib").exists() and not repo.is_dirty(untracked_files=True)


def test_the_findings_server_reaches_each_agent_with_an_mcp_client_in_its_own_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = tmp_path / "agent-cli"
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    for name in ("MCPIPECHEKR_OPENCODE", "MCPIPECHEKR_CLAUDE", "MCPIPECHEKR_CODEX", "MCPIPECHEKR_AIDER"):
        monkeypatch.setenv(name, str(stand_in))
    findings = FindingsServer(
        ("/py", "-m", "mcpipechekr", "serve", "--config", "/p/{x}.yaml"), {"HOME_X": "/h"}
    )
    providers = "providers: {phase3: anthropic/claude-sonnet-4-6}\n"
    fix_folder = tmp_path / "fix"
    prompt_file = fix_folder / "GAP-x.prompt.md"

    def resolved(name: str) -> FixAgent:
        return resolve_agent(config_with(tmp_path, f"  agent: {name}\n", providers), tmp_path, findings)

    opencode = resolved("opencode")
    ((_, text),) = opencode.files
    assert json.loads(text)["mcp"] == {
        "findings": {
            "type": "local",
            "command": list(findings.argv),
            "environment": {"HOME_X": "/h"},
            "enabled": True,
        }
    }
    claude = resolved("claude-code")
    argv = claude.command("PROMPT", prompt_file, "GAP-x")
    assert argv[1:5] == [
        "--mcp-config",
        f"{fix_folder}/claude-code.mcp.json",
        "--allowedTools",
        "mcp__findings__*",
    ]
    assert argv[-1] == "PROMPT" and claude.env["ENABLE_TOOL_SEARCH"] == "false"
    assert json.loads(dict(claude.files)["claude-code.mcp.json"]) == {
        "mcpServers": {
            "findings": {"command": "/py", "args": list(findings.argv[1:]), "env": {"HOME_X": "/h"}}
        }
    }
    codex = resolved("codex").command("PROMPT", prompt_file, "GAP-x")
    overrides = dict(arg.split("=", 1) for arg in codex if arg.startswith("mcp_servers."))
    parsed = {key: tomllib.loads(f"v = {value}")["v"] for key, value in overrides.items()}
    assert parsed == {
        "mcp_servers.findings.command": "/py",
        "mcp_servers.findings.args": list(findings.argv[1:]),  # braces in a path survive the template
        "mcp_servers.findings.env": {"HOME_X": "/h"},
    }
    assert codex[-1] == "PROMPT"
    assert [resolved(name).findings for name in ("opencode", "claude-code", "codex", "aider")] == [
        True,
        True,
        True,
        False,  # aider has no MCP client: its prompt does not mention the server
    ]
    assert resolve_agent(config_with(tmp_path, "  agent: claude-code\n", providers), tmp_path).files == ()
