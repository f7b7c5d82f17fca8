"""Benchmark: what opencode costs per attempt beyond the model, `opencode run` against `opencode serve`.

The same 8 tasks run twice as whole Phase 1 runs (`run_phase1`, one attempt at
a time): once with `--opencode-mode run` (a new `opencode run` process per
attempt), once with `--opencode-mode serve` (one `opencode serve` for the run,
a session per attempt over its HTTP API). The model is the scripted
OpenAI-compatible server of tests/fakes, answering each request after
`--latency` seconds (1 s: a realistic turn); each task is one `echo` call to
tests/servers/capture_server.py over stdio behind the capture proxy, then a
final answer: two model turns per attempt.

Overhead per attempt = (the run's wall time - the time the model spent
answering) / attempts: everything opencode, the capture proxy and the server's
start add. The serve figure includes starting the server once, spread over the
attempts. Targets: serve <= 1.5 s per attempt and <= 0.3 x run's overhead.
Exits 1 if an attempt did not complete.

Run: python bench/opencode_runner.py [--tasks 8] [--latency 1.0]
(needs opencode on PATH, $MCPIPECHEKR_OPENCODE, or the development install in .cache/agents)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import anyio  # noqa: E402
from fakes.agent_cli import INSTALL, bench_cli, isolated_home  # noqa: E402
from fakes.agent_scenarios import CAPTURE_SERVER, capture_server_config, echo_tasks, openai_call_then_answer  # noqa: E402
from fakes.openai_server import FakeOpenAI, Reply  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from mcpipechekr.artifacts.trace import read_trace  # noqa: E402
from mcpipechekr.providers import ProviderSpec  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.runners.opencode import OPENCODE_ENV_VAR, OpencodeRunner  # noqa: E402
from mcpipechekr.tasks import Task  # noqa: E402


class SlowModel:
    """The scripted model, answering after `latency` seconds; counts the time it spent."""

    def __init__(self, latency: float, tool_prefix: str = "cap_"):
        self.latency = latency
        self.answer = openai_call_then_answer(tool_prefix, "echo", {"text": "hi"})
        self.spent = 0.0
        self.requests = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        started = time.monotonic()
        time.sleep(self.latency)
        reply = self.answer(body)
        with self.lock:
            self.spent += time.monotonic() - started
            self.requests += 1
        return reply


class TimedRunner(OpencodeRunner):
    """The opencode runner, keeping how long its server's starts took when it closes."""

    start_seconds: list[float]

    async def aclose(self) -> None:
        self.start_seconds = list(self._serve.start_seconds) if self._serve is not None else []
        await super().aclose()


def one_mode(
    mode: str, binary: str, tasks: list[Task], latency: float, folder: Path
) -> tuple[float, float, int, float]:
    """One Phase 1 run of `tasks` in `mode` (an opencode mode, or "native": the pydantic-ai runner);
    returns (wall s, model s, attempts completed, server start s)."""
    native = mode == "native"
    model = SlowModel(latency, tool_prefix="" if native else "cap_")
    runner = None if native else TimedRunner(binary=binary, env=isolated_home(folder / "home"), mode=mode)  # type: ignore[arg-type]
    with FakeOpenAI(model) as fake:
        started = time.monotonic()
        paths = run_phase1(
            capture_server_config({"fake": {"base_url": fake.base_url}}),
            folder / "run",
            tasks,
            [ProviderSpec(provider="fake", model="fake-model")],
            concurrency=1,
            runner_for=None if runner is None else (lambda spec: runner),
            progress=False,
        )
        wall = time.monotonic() - started
    completed = sum(1 for path in paths if read_trace(path).status == "completed")
    return wall, model.spent, completed, sum(getattr(runner, "start_seconds", []))


def server_start_s() -> float:
    """Median time for a bare MCP client to start the capture server, list its tools and stop it."""

    async def once() -> float:
        started = time.monotonic()
        params = StdioServerParameters(command=sys.executable, args=[str(CAPTURE_SERVER)])
        async with Client(params) as client:
            assert (await client.list_tools()).tools
        return time.monotonic() - started

    return statistics.median(anyio.run(once) for _ in range(3))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the model takes per request")
    args = parser.parse_args()
    binary = bench_cli("opencode", OPENCODE_ENV_VAR)
    if binary is None:
        print(f"opencode is not installed: {INSTALL}", file=sys.stderr)
        return 2
    tasks = echo_tasks(args.tasks)
    figures: dict[str, float] = {}
    failed = False
    for mode in ("run", "serve", "native"):
        folder = Path(tempfile.mkdtemp(prefix=f"mcpipechekr-bench-opencode-{mode}-"))
        try:
            wall, spent, completed, start = one_mode(mode, binary, tasks, args.latency, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        overhead = (wall - spent) / len(tasks)
        figures[mode] = overhead
        failed = failed or completed != len(tasks)
        print(
            f"{mode:>5}: {len(tasks)} attempts in {wall:.1f} s, model {spent:.1f} s, "
            f"overhead {overhead:.2f} s per attempt, {completed}/{len(tasks)} completed",
            flush=True,
        )
        if start:
            print(
                f"       of which the server's start: {start:.1f} s once; "
                f"{(wall - spent - start) / len(tasks):.2f} s per attempt without it",
                flush=True,
            )
    server = server_start_s()
    print(
        f"the server under test's own start and stop: {server:.2f} s per attempt in every mode; "
        f"beyond it, serve {figures['serve'] - server:.2f} s, run {figures['run'] - server:.2f} s "
        f"and native {figures['native'] - server:.2f} s",
        flush=True,
    )
    ratio = figures["serve"] / figures["run"] if figures["run"] > 0 else float("nan")
    print(
        f"serve / run overhead: {ratio:.2f} (target <= 0.3); serve {figures['serve']:.2f} s per attempt "
        f"(target <= 1.5 s)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
