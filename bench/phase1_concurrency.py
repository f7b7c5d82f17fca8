"""Benchmark: Phase 1 wall time at concurrency, against the ideal, with a model that takes 200 ms.

40 tasks at concurrency 8 with the native runner (a pydantic-ai agent) against a
scripted OpenAI-compatible server (tests/fakes/openai_server.py) that answers
each request after 200 ms: first a call of `count_emails`, then a final text.
The server under test is the bundled example over streamable HTTP, reached
through the run's capture proxy, so every attempt is journaled and assembled
into a trace exactly as in a real run.

Ideal wall time: waves x requests per attempt x latency = ceil(40 / 8) x 2 x
200 ms = 2.0 s. Also measured in the same run: one attempt alone, so the
second ratio (wall / (waves x single attempt)) shows what concurrency costs
beyond the per-attempt work. Target: ratio to ideal <= 1.3.

`--runner client` measures the engine alone (capture proxy, journals, assembly,
trace writing, concurrency) with the tests' scripted MCP client in place of the
agent, waiting --latency per simulated model request.

Run: python bench/phase1_concurrency.py [--runner native|client] [--tasks 40] [--concurrency 8]
[--latency 0.2]
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.net import free_port, wait_port  # noqa: E402
from fakes.openai_server import FakeOpenAI, Reply, text_reply, tool_call_reply  # noqa: E402

from mcpipechekr.artifacts.trace import read_trace  # noqa: E402
from mcpipechekr.config import Config, ServerConfig, TimeoutsConfig  # noqa: E402
from mcpipechekr.providers import EndpointConfig, ProviderSpec  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.runners.native import NativeRunner  # noqa: E402
from mcpipechekr.tasks import Task  # noqa: E402

EXAMPLE = REPO / "examples" / "emailindex"
REQUESTS_PER_ATTEMPT = 2
TARGET = 1.3


def responder(latency_s: float) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        time.sleep(latency_s)
        if any(message.get("role") == "tool" for message in body.get("messages") or []):
            return text_reply("There are some.")
        return tool_call_reply("count_emails", {"sender": "Dana Whitfield"})

    return answer


def client_runner(latency_s: float) -> Any:
    """The engine alone: the tests' scripted MCP client, with `latency_s` per simulated model request."""
    from fakes.mcp_runner import ClientRunner

    return ClientRunner(lambda request: [("count_emails", {"sender": "Dana Whitfield"})], delay_s=latency_s)


def run(config: Config, out: Path, tasks: int, concurrency: int, runner: Any) -> tuple[float, list[Path]]:
    spec = ProviderSpec(provider="fake", model="fake-model")
    started = time.perf_counter()
    paths = run_phase1(
        config,
        out,
        [
            Task(task_id=f"task-{n:03d}", prompt=f"How many emails? ({n})", task_type="deterministic")
            for n in range(tasks)
        ],
        [spec],
        concurrency=concurrency,
        runner_for=lambda s: runner(),
        progress=False,
    )
    return time.perf_counter() - started, paths


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model request")
    parser.add_argument(
        "--runner",
        choices=["native", "client"],
        default="native",
        help="native: pydantic-ai agent and the fake provider; client: the engine alone, with a scripted "
        "MCP client that waits --latency per simulated model request",
    )
    opts = parser.parse_args()
    runner = NativeRunner if opts.runner == "native" else (lambda: client_runner(opts.latency))
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOpenAI(responder(opts.latency), max_requests=100_000) as fake,
    ):
        workdir = Path(tmp) / "emailindex"
        shutil.copytree(EXAMPLE, workdir, ignore=shutil.ignore_patterns("__pycache__"))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "server.py", "--http", str(port)],
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_port(port, server, timeout_s=30)
            config = Config(
                server=ServerConfig(name="emailindex", url=f"http://127.0.0.1:{port}/mcp"),
                providers={"endpoints": {"fake": EndpointConfig(base_url=fake.base_url)}},
                timeouts=TimeoutsConfig(task_s=60),
            )
            run(config, Path(tmp) / "warmup", 1, 1, runner)  # imports and first connections out of the way
            single, _ = run(config, Path(tmp) / "single", 1, 1, runner)
            wall, paths = run(config, Path(tmp) / "many", opts.tasks, opts.concurrency, runner)
        finally:
            server.terminate()
            server.wait(timeout=10)
        statuses = [read_trace(path).status for path in paths]
    waves = math.ceil(opts.tasks / opts.concurrency)
    ideal = waves * REQUESTS_PER_ATTEMPT * opts.latency
    print(
        f"{opts.runner} runner: {opts.tasks} tasks, concurrency {opts.concurrency}, "
        f"{opts.latency * 1000:.0f} ms per model request: "
        f"{statuses.count('completed')}/{len(statuses)} completed"
    )
    print(f"wall {wall:.2f} s; ideal {ideal:.2f} s -> ratio {wall / ideal:.2f} (target <= {TARGET})")
    print(
        f"one attempt alone {single:.2f} s; {waves} waves of it {waves * single:.2f} s -> "
        f"ratio {wall / (waves * single):.2f}"
    )
    sys.exit(0 if wall / ideal <= TARGET and statuses.count("completed") == len(statuses) else 1)


if __name__ == "__main__":
    main()
