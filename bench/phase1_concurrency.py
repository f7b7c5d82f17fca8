"""Benchmark: Phase 1 wall time at concurrency, against the ideal, with a model that takes 200 ms.

40 tasks at concurrency 8 with the native runner (a pydantic-ai agent) against a
scripted OpenAI-compatible server (tests/fakes/openai_server.py) that answers
each request after 200 ms: first a call of `count_emails`, then a final text.
The fake runs in a process of its own, like a real provider on another machine.
The server under test is the bundled example over streamable HTTP, reached
through the run's capture proxy, so every attempt is journaled and assembled
into a trace exactly as in a real run.

Ideal wall time: perfect parallelism of the same work, measured in the same
run: waves x one attempt alone = ceil(40 / 8) x (the time one attempt takes with
nothing else running). One attempt is two model requests (2 x 200 ms) plus the
work no concurrency can hide: the MCP session with the server under test
(initialize, tools/list, the call), the agent stack, the proxy, the trace.
Target: wall / ideal <= 1.3. Also printed, as a lower bound nothing can reach:
the model latency alone, waves x 2 x 200 ms = 2.0 s; the gap between the two is
per-attempt work, which on a small machine (the server under test, the agents
and the proxy share its cores) is CPU time, not waiting.

The run uses Phase 1's worker processes as `mcpipechekr run` does (one per
usable CPU, runners/workers.py). The same attempts in one process are measured
too, as the baseline they improve on: there every attempt's CPU time (~70 ms of
agent stack) queues for one interpreter.

`--runner client` measures the engine alone (capture proxy, journals, assembly,
trace writing, concurrency) with the tests' scripted MCP client in place of the
agent, waiting --latency per simulated model request.

Run: python bench/phase1_concurrency.py [--runner native|client] [--tasks 40] [--concurrency 8]
[--latency 0.2]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
from mcpipechekr.runners.workers import worker_count  # noqa: E402
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


@contextlib.contextmanager
def provider_process(latency_s: float) -> Iterator[str]:
    """The fake provider in a process of its own, as a real provider is on another machine: its HTTP
    parsing and JSON encoding would otherwise share the engine's interpreter and be charged to it."""
    ours, theirs = multiprocessing.Pipe()

    def serve(conn: Any) -> None:
        with FakeOpenAI(responder(latency_s), max_requests=100_000) as fake:
            conn.send(fake.base_url)
            conn.recv()  # until the benchmark is done

    process = multiprocessing.get_context("fork").Process(target=serve, args=(theirs,), daemon=True)
    process.start()
    try:
        if not ours.poll(30):
            raise SystemExit("the fake provider did not start")
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(timeout=10)


def client_runner(latency_s: float) -> Any:
    """The engine alone: the tests' scripted MCP client, with `latency_s` per simulated model request."""
    from fakes.mcp_runner import ClientRunner

    return ClientRunner(lambda request: [("count_emails", {"sender": "Dana Whitfield"})], delay_s=latency_s)


def run(
    config: Config, out: Path, tasks: int, concurrency: int, runner: Any, workers: int | None = None
) -> tuple[float, list[Path]]:
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
        workers=workers,
    )
    return time.perf_counter() - started, paths


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model request")
    parser.add_argument("--runs", type=int, default=3, help="measurements of each; medians are reported")
    parser.add_argument(
        "--runner",
        choices=["native", "client"],
        default="native",
        help="native: pydantic-ai agent and the fake provider; client: the engine alone, with a scripted "
        "MCP client that waits --latency per simulated model request",
    )
    opts = parser.parse_args()
    runner = NativeRunner if opts.runner == "native" else (lambda: client_runner(opts.latency))
    with tempfile.TemporaryDirectory() as tmp, provider_process(opts.latency) as provider_url:
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
                providers={"endpoints": {"fake": EndpointConfig(base_url=provider_url)}},
                timeouts=TimeoutsConfig(task_s=60),
            )
            run(config, Path(tmp) / "warmup", 1, 1, runner)  # imports and first connections out of the way
            singles, walls, in_one, paths = [], [], [], []
            for index in range(opts.runs):  # alternated, so a change of load hits all alike
                singles.append(run(config, Path(tmp) / f"single-{index}", 1, 1, runner)[0])
                took, written = run(config, Path(tmp) / f"many-{index}", opts.tasks, opts.concurrency, runner)
                walls.append(took)
                paths += written
                took, written = run(
                    config, Path(tmp) / f"one-{index}", opts.tasks, opts.concurrency, runner, workers=1
                )
                in_one.append(took)
                paths += written
            single, wall, one = (statistics.median(values) for values in (singles, walls, in_one))
        finally:
            server.terminate()
            server.wait(timeout=10)
        statuses = [read_trace(path).status for path in paths]
    waves = math.ceil(opts.tasks / opts.concurrency)
    ideal = waves * REQUESTS_PER_ATTEMPT * opts.latency
    print(
        f"{opts.runner} runner: {opts.tasks} tasks, concurrency {opts.concurrency}, "
        f"{opts.latency * 1000:.0f} ms per model request, medians of {opts.runs} runs: "
        f"{statuses.count('completed')}/{len(statuses)} attempts completed"
    )
    ideal_wall = waves * single
    print(
        f"wall {wall:.2f} s; ideal {ideal_wall:.2f} s ({waves} waves x one attempt alone {single:.2f} s) "
        f"-> ratio {wall / ideal_wall:.2f} (target <= {TARGET})"
    )
    print(
        f"in one process (no workers): wall {one:.2f} s -> ratio {one / ideal_wall:.2f}; "
        f"workers ({worker_count(opts.concurrency, opts.tasks)}) take {wall / one:.2f} of that time"
    )
    print(
        f"model latency alone {ideal:.2f} s -> ratio {wall / ideal:.2f}; one attempt spends "
        f"{single - REQUESTS_PER_ATTEMPT * opts.latency:.2f} s beyond its model requests"
    )
    sys.exit(0 if wall / ideal_wall <= TARGET and statuses.count("completed") == len(statuses) else 1)


if __name__ == "__main__":
    main()
