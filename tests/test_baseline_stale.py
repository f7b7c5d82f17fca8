"""A stale baseline after a fix that changes the minimum, on a server of the tests' own.

The order book (tests/servers/orders_server.py) lists orders in import order,
two a page, so "the first order of Mira Castell" takes three calls; the fix
(a commit in the server's own git repository) adds a `sort` parameter and one
call answers. Its demo agent (copied beside it as demo_agent.py) uses the
parameter when the tool offers it. Everything runs for real: the server
process, the git repository, `mcpipechekr` and doit in the project folder.

Before the rebuild the baseline still prices the task at three calls: evaluate
says so (a stale-baseline note and a beaten-minimum note, with the figures as
measured). `doit baseline` sees the entry is stale against the new run's
tools.json, rebuilds it, and the phase-0 agent's single call becomes its
minimum; evaluated again, the run shows a call ratio of 1 and no efficiency
above 1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest
import yaml
from project import ROOT, doit, mcpipechekr, ran, up_to_date
from trace_builder import call, ctx_of, make_trace

from mcpipechekr.artifacts import BugReport, RunDir, ToolsSnapshot, list_runs, read_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.bug_report import TaskStats
from mcpipechekr.evaluate.correctness import identifying_payload
from mcpipechekr.evaluate.orchestrate import beaten_minimums, evaluate_contexts
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.tasks import Task

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent / "servers"
TASK = "first-order-mira"
TASKS = {
    "tasks": [
        {
            "task_id": TASK,
            "prompt": "Which was the first order placed by Mira Castell? Give its id and date.",
            "task_type": "deterministic",
            "expected_tool": "list_orders",
            "reference_calls": [
                {"tool": "list_orders", "arguments": {"customer": "Mira Castell", "page": page}}
                for page in (1, 2, 3)
            ],
        }
    ]
}


def make_project(root: Path) -> Path:
    server = root / "server"
    server.mkdir(parents=True)
    shutil.copy(SERVERS / "orders_server.py", server / "server.py")
    shutil.copy(SERVERS / "orders_demo_agent.py", server / "demo_agent.py")
    repo = git.Repo.init(server)
    repo.index.add(["server.py", "demo_agent.py"])
    repo.index.commit("order book")
    repo.close()
    config = {
        "server": {
            "name": "orders",
            "command": "python",
            "args": ["server.py"],
            "cwd": "server",
            "repo": "server",
        },
        "providers": {phase: "demo" for phase in ("phase0", "phase05", "phase1", "phase2", "phase3")},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    shutil.copy(ROOT / "dodo.py", root / "dodo.py")
    return root


def commit_the_sort_fix(server: Path) -> None:
    source = (server / "server.py").read_text()
    assert "SORTABLE = False" in source
    (server / "server.py").write_text(source.replace("SORTABLE = False", "SORTABLE = True"))
    repo = git.Repo(server)
    repo.index.add(["server.py"])
    repo.index.commit("fix: list_orders sorts by date")
    repo.close()


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def entry(project: Path) -> BaselineEntry:
    found = read_model(project / "runs" / "baseline.json", Baseline).entry(TASK)
    assert found is not None
    return found


def stats(run: RunDir) -> TaskStats:
    (task,) = read_model(run.bug_report, BugReport).tasks
    return task


def test_a_fix_that_adds_a_sort_parameter_makes_the_baseline_stale_and_its_rebuild_current(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "shop")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({HOME_ENV: str(tmp_path / "home"), "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"

    made = succeeded(mcpipechekr(project, env, "baseline"))
    plausibility = "plausibility 1.00 (rules: not an error, not empty)"
    assert f"baselined  {TASK}: reference_calls, {plausibility}, 3 call(s)" in made
    first_entry = entry(project)
    assert first_entry.calls == 3 and first_entry.tools_hash is not None
    again = succeeded(mcpipechekr(project, env, "baseline"))
    assert "baseline: unchanged" in again and "\nstale " not in again

    # the server as it was: three calls against a minimum of three
    succeeded(doit(project, env, "trace", "evaluate"))
    (before,) = list_runs(project / "runs")
    assert read_model(before.tools, ToolsSnapshot).tools_hash == first_entry.tools_hash
    assert stats(before).call_ratio == 1.0
    assert not [n for n in read_model(before.bug_report, BugReport).notes if "the baseline is stale" in n]

    commit_the_sort_fix(project / "server")
    succeeded(mcpipechekr(project, env, "run"))
    _, after = list_runs(project / "runs")
    assert read_model(after.tools, ToolsSnapshot).tools_hash != first_entry.tools_hash

    # evaluated against the stale entry: warned, and the figures that beat it are kept and explained
    warned = succeeded(mcpipechekr(project, env, "evaluate", str(after.root)))
    assert f"note: the baseline is stale for `{TASK}`" in warned
    assert (
        f"note: task `{TASK}` (demo) beat its known minimum: 1 call(s) on average where the minimum is 3"
        in warned
    )
    assert stats(after).call_ratio is not None and stats(after).call_ratio < 1

    # doit sees the entry is stale against the new run's tools.json, and the rebuild finds the one call
    rebuild = doit(project, env, "baseline")
    rebuilt = succeeded(rebuild)
    assert "baseline" in ran(rebuild)
    assert f"stale      {TASK}: made against other tool definitions" in rebuilt
    assert (
        "the phase-0 agent answered in 1 call(s)" in rebuilt and "where the reference calls take 3" in rebuilt
    )
    new_entry = entry(project)
    assert new_entry.tools_hash == read_model(after.tools, ToolsSnapshot).tools_hash
    assert new_entry.calls == 1 and new_entry.method == "reference_calls"
    assert new_entry.result == first_entry.result  # the accepted answer is still the reference calls'
    current_baseline = doit(project, env, "baseline")
    assert current_baseline.returncode == 0 and "baseline" in up_to_date(current_baseline)

    judged = succeeded(mcpipechekr(project, env, "evaluate", str(after.root)))
    assert "the baseline is stale" not in judged and "beat its known minimum" not in judged
    current = stats(after)
    assert current.min_calls == 1 and current.call_ratio == 1.0
    assert current.efficiency_ratio is not None and current.efficiency_ratio <= 1.0
    assert current.successes == current.runs


def task_stats(**figures: float | int | None) -> TaskStats:
    values: dict = {
        "task_id": "cheapest-harbour-book",
        "provider": "shop-llm/model",
        "runs": 2,
        "successes": 2,
        "success_rate": 1.0,
        "wilson_low": 0.3,
        "wilson_high": 1.0,
        "k": 2,
        "pass_at_k": 1.0,
        "pass_hat_k": 1.0,
        "min_calls": 4,
        "mean_calls": 4.0,
        "call_ratio": 1.0,
        "mean_tokens_observed": 900.0,
        "tokens_source": "estimated",
        "token_cost_optimal": 800,
        "efficiency_ratio": 0.9,
    }
    return TaskStats(**{**values, **figures})


def test_a_trace_that_beats_the_minimum_is_noted_not_hidden() -> None:
    assert beaten_minimums([task_stats()]) == []
    (calls,) = beaten_minimums([task_stats(mean_calls=2.0, call_ratio=0.5)])
    assert (
        "task `cheapest-harbour-book` (shop-llm/model) beat its known minimum: 2 call(s) on average" in calls
    )
    assert (
        "where the minimum is 4" in calls
        and "`mcpipechekr baseline --task cheapest-harbour-book` rebuilds it" in calls
    )
    (tokens,) = beaten_minimums([task_stats(efficiency_ratio=1.6)])
    assert "fewer tokens than the baseline's 800 (efficiency 1.60)" in tokens


def test_only_a_correct_answer_in_fewer_calls_says_the_minimum_was_beaten() -> None:
    """A wrong answer in one call where three are needed is a wrong answer, not a stale baseline."""
    task = Task(
        task_id="harbour-total",
        prompt="What is the harbour's total?",
        task_type="deterministic",
        expected_tool="total",
        expected_result=42,
        min_calls=3,
    )
    entry = BaselineEntry(
        task_id=task.task_id,
        result=identifying_payload(42, expected=True),
        plausibility_score=1.0,
        evaluator="rules",
        timestamp="2026-12-01T09:00:00Z",
        method="reference_calls",
        calls=3,
        reference_tokens=50,
    )

    def notes(answer: str) -> list[str]:
        trace = make_trace(task.task_id, [call("total", {}, {"total": 42})], answer=answer)
        report, _ = evaluate_contexts(
            [ctx_of(trace, task, entry)],
            run_id="run-20261201-001",
            phase1_provider="demo",
            threshold=0.2,
            analyzers=[],
        )
        return [note for note in report.notes if "beat its known minimum" in note]

    assert notes("The total is 17.") == []
    (beaten,) = notes("The total is 42.")
    assert "1 call(s) on average where the minimum is 3" in beaten


def test_only_entries_made_against_other_known_tools_are_stale() -> None:
    old, new = "sha256:" + "a" * 64, "sha256:" + "b" * 64

    def made(task_id: str, method: str, tools_hash: str | None) -> BaselineEntry:
        return BaselineEntry(
            task_id=task_id,
            result={"values": [["SO-0203"]], "match": "any"},
            plausibility_score=1.0,
            evaluator="rules",
            timestamp="2026-01-05T10:00:00Z",
            method=method,
            calls=3,
            tools_hash=tools_hash,
        )

    baseline = Baseline(
        generated_at="2026-01-05T10:00:00Z",
        tasks=[
            made("by-reference", "reference_calls", old),
            made("by-agent", "agent", old),
            made("current", "reference_calls", new),
            made("by-hand", "manual", old),
            made("unrecorded", "reference_calls", None),
        ],
    )
    assert baseline.stale_tasks(new) == ["by-reference", "by-agent"]
    assert baseline.stale_tasks(old) == ["current"]
    assert baseline.stale_tasks(None) == []
