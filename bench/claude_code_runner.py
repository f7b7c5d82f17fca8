"""Benchmark: what Claude Code costs per attempt beyond the model, and how much of it is the CLI's start.

The same 8 tasks as bench/opencode_runner.py run as a whole Phase 1 run
(`run_phase1`, one attempt at a time) with the claude-code runner: a new
`claude -p` process per attempt, the only mode there is (a long-lived process
cannot run attempts independently; docs/runners.md says why). The model is
the scripted Anthropic Messages server of tests/fakes, answering each request
after `--latency` seconds (1 s: a realistic turn); each task is one `echo`
call to tests/servers/capture_server.py over stdio behind the capture proxy,
then a final answer: two model turns per attempt.

Overhead per attempt = (the run's wall time - the time the model spent
answering) / attempts: everything Claude Code, the capture proxy, the server
and the run's own bookkeeping add. It is split, per attempt, into the time
before the first model request (the CLI starting, launching the proxy and the
server, listing its tools), between requests beyond the model's time (the
tool call), after the last answer (the CLI stopping the server and exiting,
the stream converted) and outside the runner (the journal read, the trace
written). It also counts the journals whose proxy was killed before it
finished them (the run waited `JOURNAL_SETTLE_S`, 10 s, for each until it
learned to stop waiting once the proxy is gone). Then the
CLI alone: `claude -p` with no MCP server, answered at once, spawn to its
first request and to its exit (median of `--probes`): the part of every
attempt a process kept alive between attempts could have saved. Exits 1 if an
attempt did not complete.

Run: python bench/claude_code_runner.py [--tasks 8] [--latency 1.0] [--probes 5] [--keep]
(needs claude on PATH, $MCPIPECHEKR_CLAUDE, or the development install in .cache/agents)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.agent_cli import INSTALL, bench_cli, isolated_home  # noqa: E402
from fakes.agent_scenarios import anthropic_call_then_answer, capture_server_config, echo_tasks  # noqa: E402
from fakes.anthropic_server import FakeAnthropic, Reply, text_reply  # noqa: E402

from mcpipechekr.artifacts.trace import read_trace  # noqa: E402
from mcpipechekr.providers import ProviderSpec  # noqa: E402
from mcpipechekr.runners.base import RunnerOutput, RunRequest  # noqa: E402
from mcpipechekr.runners.claude_code import CLAUDE_ENV_VAR, ClaudeCodeRunner  # noqa: E402
from mcpipechekr.runners.engine import _journal_settled  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.tasks import Task  # noqa: E402

MODEL = "claude-fake-1"


class SlowModel:
    """The scripted model, answering after `latency` seconds; keeps when each request came and ended."""

    def __init__(self, latency: float):
        self.latency = latency
        self.answer = anthropic_call_then_answer("mcp__cap__", "echo", {"text": "hi"})
        self.spans: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        started = time.monotonic()
        time.sleep(self.latency)
        reply = self.answer(body)
        with self.lock:
            self.spans.append((started, time.monotonic()))
        return reply

    def busy(self, since: float = float("-inf"), until: float = float("inf")) -> float:
        """Seconds within [since, until] during which at least one request was being answered."""
        total, end = 0.0, float("-inf")
        for start, stop in sorted(self.spans):
            start, stop = max(start, since, end), min(stop, until)
            if stop > start:
                total += stop - start
                end = stop
        return total


class TimedRunner(ClaudeCodeRunner):
    """The Claude Code runner, keeping when each attempt's `run` began and ended."""

    spans: list[tuple[float, float]]

    async def run(self, request: RunRequest) -> RunnerOutput:
        started = time.monotonic()
        try:
            return await super().run(request)
        finally:
            self.spans = [*getattr(self, "spans", []), (started, time.monotonic())]


def phase1(binary: str, tasks: list[Task], latency: float, folder: Path) -> dict[str, float]:
    """One Phase 1 run of `tasks`; its wall time, model time, completed attempts and the split per attempt."""
    model = SlowModel(latency)
    with FakeAnthropic(model) as fake:
        env = {
            **isolated_home(folder / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
        }
        runner = TimedRunner(binary=binary, env=env)
        started = time.monotonic()
        paths = run_phase1(
            capture_server_config(),
            folder / "run",
            tasks,
            [ProviderSpec(provider="anthropic", model=MODEL)],
            concurrency=1,
            runner_for=lambda spec: runner,
            progress=False,
        )
        wall = time.monotonic() - started
    before = between = after = 0.0
    for begun, ended in runner.spans:
        inside = sorted(span for span in model.spans if begun <= span[0] <= ended)
        if not inside:
            continue
        before += inside[0][0] - begun
        after += ended - inside[-1][1]
        between += (inside[-1][1] - inside[0][0]) - model.busy(inside[0][0], inside[-1][1])
    attempts = max(1, len(runner.spans))
    journals = sorted((folder / "run" / "journals").glob("*.jsonl"))
    return {
        "cut": sum(1 for journal in journals if not _journal_settled(journal)),
        "wall": wall,
        "model": model.busy(),
        "completed": sum(1 for path in paths if read_trace(path).status == "completed"),
        "before": before / attempts,
        "between": between / attempts,
        "after": after / attempts,
        "in_runner": sum(end - begin for begin, end in runner.spans) / attempts,
    }


def bare_cli(binary: str, folder: Path, probes: int) -> tuple[float, float]:
    """Median seconds from spawning `claude -p` (no MCP server, answered at once) to its first model
    request, and to its exit."""
    firsts: list[float] = []
    exits: list[float] = []
    arrivals: list[float] = []

    def answer(body: dict) -> Reply:
        arrivals.append(time.monotonic())
        return text_reply("Done.")

    project = folder / "project"
    project.mkdir(parents=True, exist_ok=True)
    config = folder / "no-mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    with FakeAnthropic(answer) as fake:
        env = {
            **os.environ,
            **isolated_home(folder / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ENABLE_TOOL_SEARCH": "false",
        }
        argv = [
            binary, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
            "--no-session-persistence", "--mcp-config", str(config), "--strict-mcp-config",
            "--model", MODEL, "--max-turns", "2", "--tools", "",
        ]  # fmt: skip
        for _ in range(probes):
            arrivals.clear()
            started = time.monotonic()
            subprocess.run(
                argv, input=b"Say done.", cwd=project, env=env, capture_output=True, timeout=60, check=True
            )
            exits.append(time.monotonic() - started)
            firsts.append(arrivals[0] - started if arrivals else float("nan"))
    return statistics.median(firsts), statistics.median(exits)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the model takes per request")
    parser.add_argument("--probes", type=int, default=5, help="starts of the bare CLI to time")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (journals, traces)")
    args = parser.parse_args()
    binary = bench_cli("claude", CLAUDE_ENV_VAR)
    if binary is None:
        print(f"claude is not installed: {INSTALL}", file=sys.stderr)
        return 2
    tasks = echo_tasks(args.tasks)
    folder = Path(tempfile.mkdtemp(prefix="mcpipechekr-bench-claude-"))
    try:
        figures = phase1(binary, tasks, args.latency, folder / "phase1")
        first, exit_ = bare_cli(binary, folder / "bare", args.probes)
    finally:
        if args.keep:
            print(f"kept: {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    overhead = (figures["wall"] - figures["model"]) / len(tasks)
    outside = overhead - (figures["in_runner"] - figures["model"] / len(tasks))
    completed = int(figures["completed"])
    print(
        f"  run: {len(tasks)} attempts in {figures['wall']:.1f} s, model {figures['model']:.1f} s, "
        f"overhead {overhead:.2f} s per attempt, {completed}/{len(tasks)} completed",
        flush=True,
    )
    print(
        f"       per attempt in the runner: {figures['before']:.2f} s before the first model request "
        f"(CLI start, proxy and server start, tool list), {figures['between']:.2f} s between requests "
        f"beyond the model (the tool call), {figures['after']:.2f} s after the last answer (CLI exit, "
        f"server stop, conversion); {outside:.2f} s outside the runner (journal, trace)",
        flush=True,
    )
    print(
        f"       journals the proxy did not finish (no `proxy_stopped`: it was killed first): "
        f"{int(figures['cut'])}/{len(tasks)}",
        flush=True,
    )
    print(
        f"  the CLI alone (no MCP server, median of {args.probes}): {first:.2f} s to its first model "
        f"request, {exit_:.2f} s to its exit: the process's own start and exit are at most "
        f"{exit_ / overhead if overhead > 0 else float('nan'):.2f} x the overhead per attempt",
        flush=True,
    )
    return 0 if completed == len(tasks) else 1


if __name__ == "__main__":
    sys.exit(main())
