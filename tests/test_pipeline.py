"""A run opened by the steps: its manifest, its secrets, and how runs end when things go wrong.

Both front ends open a run through `steps.snapshot.snapshot_step` and run each
step inside `steps.stage.run_stage`; the graph's own behaviour is in test_graph.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import orjson
import pytest
from click.testing import CliRunner
from project import copy_project, doit

from mcpipechekr.artifacts import (
    Manifest,
    list_runs,
    list_traces,
    read_model,
)
from mcpipechekr.cli import main
from mcpipechekr.config import Config, load_config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.runplan import RunPlan
from mcpipechekr.steps.snapshot import snapshot_step
from mcpipechekr.steps.stage import plan_run_folder, run_stage
from mcpipechekr.tasks import load_tasks

pytestmark = pytest.mark.xdist_group("test_pipeline")

TINY = Path(__file__).parent / "servers" / "tiny_server.py"
PLANTED = "sk-test-PLANTED-4f1c9b2e7d"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("project"))


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
                timeout_s: 30  # the start-up bound: only a server that never answers waits it out
            """
        )
    )
    return config


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def open_run(config: Config) -> RunPlan:
    """A new run opened as `mcpipechekr run` opens it: planned, then the snapshot step."""
    tasks = load_tasks(config.paths.tasks).tasks
    plan = plan_run_folder(config, tasks, runner="native", keep_builtin_tools=False, repeat=1, new_run=True)
    snapshot_step(config, plan, tasks)
    return plan


def test_secrets_never_reach_the_run_folder(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path), environ={"TINY_API_KEY": PLANTED})
    assert config.server.env["TINY_API_KEY"] == PLANTED  # the server does get it
    plan = open_run(config)
    manifest = orjson.loads(plan.run_dir.manifest.read_bytes())
    assert manifest["config"]["server"]["env"]["TINY_API_KEY"] == "${TINY_API_KEY}"
    assert manifest["status"] == "completed" and manifest["identity"] == plan.identity
    assert [tool["name"] for tool in orjson.loads(plan.run_dir.tools.read_bytes())["tools"]] == [
        "echo",
        "pid",
        "sleep",
    ]
    assert PLANTED.encode() not in all_bytes(plan.run_dir.root)


def test_a_server_that_dies_at_start_fails_the_run_with_its_reason(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "--exit-at-start", "3"), environ={"TINY_API_KEY": PLANTED})
    with pytest.raises(ServerHalt, match="exited with code 3"):
        open_run(config)
    (run,) = list_runs(tmp_path / "runs")
    manifest = read_model(run.manifest, Manifest)
    assert manifest.status == "failed"
    assert manifest.status_reason is not None and manifest.status_reason.startswith("tools: ")
    assert "exited with code 3 during start-up" in manifest.status_reason
    assert "missing DATABASE_URL" in run.server_stderr_log.read_text()  # stderr is kept in the run
    assert not run.tools.exists()


def test_mcpipechekr_run_on_a_dead_server_leaves_the_run_failed(tmp_path: Path) -> None:
    config = write_config(tmp_path, "--exit-at-start", "3")
    result = CliRunner(env={"TINY_API_KEY": PLANTED}).invoke(
        main, ["run", "--config", str(config)], catch_exceptions=False
    )
    assert result.exit_code == 2 and "exited with code 3 during start-up" in result.output
    (run,) = list_runs(tmp_path / "runs")
    assert read_model(run.manifest, Manifest).status == "failed"
    assert not list_traces(run)


def test_ctrl_c_marks_the_run_interrupted(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path), environ={"TINY_API_KEY": PLANTED})
    plan = open_run(config)
    with pytest.raises(KeyboardInterrupt):
        with run_stage(config, plan.run_dir, "trace") as manifest:
            assert manifest is not None and manifest.status == "running"
            assert read_model(plan.run_dir.manifest, Manifest).status == "running"
            raise KeyboardInterrupt
    manifest = read_model(plan.run_dir.manifest, Manifest)
    assert manifest.status == "interrupted"
    assert manifest.status_reason == "trace: interrupted by the user (Ctrl-C)"
    assert manifest.finished_at is not None


def test_a_step_that_fails_records_its_redacted_reason(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path), environ={"TINY_API_KEY": PLANTED})
    plan = open_run(config)
    with pytest.raises(RuntimeError):
        with run_stage(config, plan.run_dir, "evaluate"):
            raise RuntimeError(f"the model said {PLANTED}\nand more")
    manifest = read_model(plan.run_dir.manifest, Manifest)
    assert manifest.status == "failed"
    assert manifest.status_reason == "evaluate: the model said ${TINY_API_KEY}"


def test_server_health_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    ok = cli.invoke(main, ["server", "health", "--command", f"python {TINY}"], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
    assert "is healthy (stdio: python " in ok.output
    assert "echo  Echo the text back." in ok.output
    bad = cli.invoke(
        main, ["server", "health", "--command", f"python {TINY} --exit-at-start 3"], catch_exceptions=False
    )
    assert bad.exit_code == 2
    assert "exited with code 3 during start-up" in bad.output
    too_few = cli.invoke(
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
    git.Repo.init(tmp_path / "repo").index.commit("the server")  # the loop's preflight needs a fix step
    config.write_text(
        f"server:\n  name: notes\n  command: python\n  args: [{lint_server}, --poisoned]\n"
        f"  repo: {tmp_path / 'repo'}\n  health:\n    timeout_s: 20\nfix:\n  agent: demo\n"
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
    # past the gate: traced and evaluated; no server-side bug to approve, so the loop ends there by itself
    assert "stopped before Phase 1" not in passed.stdout
    assert "has no server-side bug left to fix" in passed.stdout, passed.stdout + passed.stderr
    last = list_runs(tmp_path / "runs")[-1]
    assert list_traces(last) and last.bug_report.exists()
    manifest = read_model(last.manifest, Manifest)
    assert manifest.status == "completed"
    assert [(r.tool, r.reason) for r in manifest.accepted_risks] == [
        ("sync_notes", "vendored tool, reviewed")
    ]
