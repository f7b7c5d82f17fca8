"""A harness run end to end: `doit loop` on the bundled example, and how runs end when things go wrong."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import orjson
import pytest
from click.testing import CliRunner

from mcpipechekr.artifacts import (
    BugReport,
    CheckReport,
    Manifest,
    TefReport,
    ToolsSnapshot,
    list_runs,
    list_traces,
    read_model,
)
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.pipeline import harness_run

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "servers" / "tiny_server.py"
PLANTED = "sk-test-PLANTED-4f1c9b2e7d"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project files a user runs `doit loop` in (no .mcpipechekr/ or runs/ yet)."""
    root = tmp_path_factory.mktemp("project")
    for name in ("dodo.py", "config.yaml", "tasks.yaml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "checks", root / "checks")
    shutil.copytree(
        ROOT / "examples", root / "examples", ignore=shutil.ignore_patterns("*.db", "__pycache__")
    )
    return root


def doit(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_doit_loop_on_the_bundled_example(project: Path, emailindex_env: dict[str, str]) -> None:
    # without a baseline the loop refuses to start and says what to do
    refused = doit(project, emailindex_env, "loop")
    assert refused.returncode != 0 and "doit baseline" in refused.stdout + refused.stderr
    assert list_runs(project / "runs") == []

    first = doit(project, emailindex_env, "baseline", "loop")
    assert first.returncode == 0, first.stdout + first.stderr
    runs = list_runs(project / "runs")
    assert len(runs) == 1
    manifest = read_model(runs[0].manifest, Manifest)
    assert manifest.status == "completed" and manifest.finished_at is not None
    workspace = git.Repo(project / ".mcpipechekr" / "workspace" / "emailindex")
    assert manifest.mcp_server_sha == workspace.head.commit.hexsha
    assert not manifest.mcp_server_dirty  # the archive the server built is ignored by the repo
    assert manifest.providers.phase1 == "demo"
    assert "find-first-email-ron-chinn" in manifest.task_ids
    tools = read_model(runs[0].tools, ToolsSnapshot)
    assert [t.name for t in tools.tools] == ["query_email_database", "get_email", "count_emails"]
    assert runs[0].run_id in first.stdout and "3 tools" in first.stdout
    # the loop checked the server: the planted defects are the expected failures, nothing else fails
    check = read_model(runs[0].check_report, CheckReport)
    assert check.exit_code == 0 and check.summary.failed == 0
    assert sorted(c.id for c in check.checks if c.expected_failure) == [
        "FC:keywords-with-fields",
        "FC:ron-chinn-first-by-date",
    ]
    # ...and linted the descriptions the run saw, offline
    tef = read_model(runs[0].tef_report, TefReport)
    assert tef.selector == "lexical-bm25" and tef.tools_hash == tools.tools_hash
    assert tef.summary.errors == 0 and tef.summary.misleading_tools == 0
    # ...then ran every task blind with the demo model and evaluated the traces
    assert len(list_traces(runs[0])) == len(manifest.task_ids)
    bugs = read_model(runs[0].bug_report, BugReport)
    ids = [bug.id for bug in bugs.bugs]
    assert "GAP-no-date-sort-query-email-database" in ids
    assert "BUG-no-such-column-fts-rank-query-email-database" in ids
    assert [b.token_cost_of_gap for b in bugs.bugs] == sorted(
        (b.token_cost_of_gap for b in bugs.bugs), reverse=True
    )
    assert runs[0].phase2_narrative.read_text().strip()

    # a second loop gets a new run folder and reuses the workspace repository as it is
    second = doit(project, emailindex_env, "loop", "--task", "find-first-email-ron-chinn")
    assert second.returncode == 0, second.stdout + second.stderr
    runs = list_runs(project / "runs")
    assert [r.run_id[-3:] for r in runs] == ["001", "002"]
    assert read_model(runs[1].manifest, Manifest).task_ids == ["find-first-email-ron-chinn"]
    assert len(list(workspace.iter_commits())) == 1


@pytest.mark.slow
def test_doit_loop_reports_a_bad_task_selection_without_a_traceback(
    project: Path, emailindex_env: dict[str, str]
) -> None:
    result = doit(project, emailindex_env, "loop", "--task", "no-such-task")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "no-such-task" in output and "Traceback" not in output


def write_config(tmp_path: Path, *server_args: str) -> Path:
    args = ", ".join(f'"{a}"' for a in [str(TINY), *server_args])
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  - task_id: echo-hello\n    prompt: Say hello.\n    task_type: deterministic\n"
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            server:
              name: tiny
              command: python
              args: [{args}]
              env:
                TINY_API_KEY: ${{TINY_API_KEY}}
              health:
                timeout_s: 5
            """
        )
    )
    return config


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def test_secrets_never_reach_the_run_folder(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path), environ={"TINY_API_KEY": PLANTED})
    assert config.server.env["TINY_API_KEY"] == PLANTED  # the server does get it
    with harness_run(config) as run:
        assert run.server.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
    manifest = orjson.loads(run.run_dir.manifest.read_bytes())
    assert manifest["config"]["server"]["env"]["TINY_API_KEY"] == "${TINY_API_KEY}"
    assert manifest["status"] == "completed"
    assert PLANTED.encode() not in all_bytes(run.run_dir.root)


def test_a_server_that_dies_at_start_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "--exit-at-start", "3"), environ={"TINY_API_KEY": PLANTED})
    with pytest.raises(ServerHalt, match="exited with code 3"):
        with harness_run(config):
            pytest.fail("a run must not start on a dead server")
    (run,) = list_runs(tmp_path / "runs")
    manifest = read_model(run.manifest, Manifest)
    assert manifest.status == "failed"
    assert (
        manifest.status_reason is not None and "exited with code 3 during start-up" in manifest.status_reason
    )
    assert "missing DATABASE_URL" in run.server_stderr_log.read_text()  # stderr is kept in the run
    assert not run.tools.exists()


def test_ctrl_c_marks_the_run_interrupted(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path), environ={"TINY_API_KEY": PLANTED})
    with pytest.raises(KeyboardInterrupt):
        with harness_run(config) as run:
            raise KeyboardInterrupt
    manifest = read_model(run.run_dir.manifest, Manifest)
    assert manifest.status == "interrupted"
    assert not run.server.running


def test_server_health_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(main, ["server", "health", "--command", f"python {TINY}"], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
    assert "is healthy (stdio: python " in ok.output
    assert "echo  Echo the text back." in ok.output
    bad = runner.invoke(
        main, ["server", "health", "--command", f"python {TINY} --exit-at-start 3"], catch_exceptions=False
    )
    assert bad.exit_code == 2
    assert "exited with code 3 during start-up" in bad.output
    too_few = runner.invoke(
        main, ["server", "health", "--command", f"python {TINY}", "--min-tools", "5"], catch_exceptions=False
    )
    assert too_few.exit_code == 2 and "needs at least 5" in too_few.output


@pytest.mark.slow
def test_the_loop_stops_at_the_lint_gate_until_the_risk_is_accepted(project: Path, tmp_path: Path) -> None:
    lint_server = Path(__file__).parent / "servers" / "lint_fixture_server.py"
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  - task_id: order\n    prompt: Where is order 1042?\n    task_type: deterministic\n"
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        f"server:\n  name: notes\n  command: python\n  args: [{lint_server}, --poisoned]\n"
        "  health:\n    timeout_s: 20\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    stopped = doit(project, env, "baseline", "--config", str(config), "loop", "--config", str(config))
    assert stopped.returncode != 0
    assert "stopped before Phase 1" in stopped.stdout and "sync_notes" in stopped.stdout
    (run,) = list_runs(tmp_path / "runs")
    assert read_model(run.manifest, Manifest).status == "failed"

    accept = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpipechekr",
            "lint",
            "--config",
            str(config),
            "--accept-risk",
            "sync_notes",
            "--reason",
            "vendored tool, reviewed",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert accept.returncode == 0, accept.stdout + accept.stderr
    passed = doit(project, env, "loop", "--config", str(config))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    manifest = read_model(list_runs(tmp_path / "runs")[-1].manifest, Manifest)
    assert manifest.status == "completed"
    assert [(r.tool, r.reason) for r in manifest.accepted_risks] == [
        ("sync_notes", "vendored tool, reviewed")
    ]
