"""Benchmark: Phase 1 in one process against the same attempts in forked processes, at model latency.

Why: `mcpipechekr run` runs a run's attempts concurrently in one process, one
event loop. Each attempt costs that interpreter some CPU (the agent stack, the
MCP client session, the capture proxy, the trace), so one process could, in
principle, be paced by its own CPU rather than by the model. This benchmark
measures how much spreading the attempts over forked processes would gain,
with a model that answers as real ones do.

Setup: N tasks at concurrency C with the native runner (a pydantic-ai agent)
against a scripted OpenAI-compatible server (tests/fakes/openai_server.py)
that answers first with a call of `count_emails`, then with a final text. The
fake runs in a process of its own, like a real provider on another machine.
Each of its answers waits a model latency: by default drawn uniformly from
1–3 s, seeded per task and turn (the same attempt waits the same in every
run and every way of running, whatever order the requests arrive in);
`--latency 0.2` makes every request wait 200 ms instead (the fast mode, where
per-attempt CPU weighs most). The server under test is the bundled example over
streamable HTTP, reached through the run's capture proxy, so every attempt is
journaled and assembled into a trace exactly as in a real run.

Measured in the same run, alternated so a change of load hits all alike:
(a) all attempts in one process: `run_phase1` at concurrency C, one event
    loop, as `mcpipechekr run` does;
(b) the same attempts spread over P forked processes (P = usable CPUs, at
    most C): each runs `run_phase1` on its share of the tasks (every P-th,
    in plan order) with its share of the C slots, in a run folder of its own.
    Forked after the imports and a warm-up, as worker processes would be;
(c) one attempt alone, which gives the work no concurrency can hide: its wall
    time beyond its own model latency (the MCP session, the agent stack, the
    proxy, the trace).

Ideal wall time of a way of running: perfect parallelism of the same work,
every slot taking the next attempt in plan order as soon as it is free, each
attempt taking its model latency plus (c)'s extra. With equal attempts (the
fast mode) that is waves x one attempt alone = ceil(N / C) x (c). The model
latency alone, scheduled the same way for (a), is the lower bound nothing
can reach. For (b) the ideal is that of its fixed split of the tasks, which
can be a little longer than one queue's; workers sharing one queue would not
pay it, so the gain is also given net of it: 1 - (ratio b / ratio a).

Decision: workers gain more than 10 % (the larger of the two gains) or not.
Exit status 1 if an attempt did not complete or the chosen way of running is
more than 1.3 x its ideal.

`--runner client` measures the engine alone (capture proxy, journals, assembly,
trace writing, concurrency) with the tests' scripted MCP client in place of the
agent, waiting the same model latency per attempt.

Run: python bench/phase1_concurrency.py [--latency SECONDS] [--runner native|client] [--tasks 40]
[--concurrency 8] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import math
import multiprocessing
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.net import free_port, wait_port  # noqa: E402
from fakes.openai_server import FakeOpenAI, Reply, text_reply, tool_call_reply  # noqa: E402

from mcpipechekr.artifacts.trace import read_trace  # noqa: E402
from mcpipechekr.config import Config, ServerConfig, TimeoutsConfig  # noqa: E402
from mcpipechekr.providers import EndpointConfig, ProviderSpec  # noqa: E402
from mcpipechekr.runners.base import RunnerOutput, RunRequest  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.runners.native import NativeRunner  # noqa: E402
from mcpipechekr.tasks import Task  # noqa: E402

EXAMPLE = REPO / "examples" / "emailindex"
TARGET = 1.3
THRESHOLD = 10.0
"""Percent of wall time that forked processes must gain to be worth their complexity."""
PROMPT = "How many emails? ({})"
TASK_NUMBER = re.compile(r"How many emails\? \((\d+)\)")
WARMUP_TASK, SINGLE_TASK = 9000, 10_000


@dataclass(frozen=True)
class Latency:
    """Model latency per request: fixed when low == high, else uniform in [low, high], seeded per task
    and turn, so an attempt waits the same however and whenever it runs."""

    low: float
    high: float
    seed: int = 1

    def request(self, task: int, turn: int) -> float:
        if self.low == self.high:
            return self.low
        return random.Random(f"{self.seed}:{task}:{turn}").uniform(self.low, self.high)

    def attempt(self, task: int) -> float:
        """An attempt's two requests: the call of `count_emails` (turn 0) and the final answer (turn 1)."""
        return self.request(task, 0) + self.request(task, 1)

    def __str__(self) -> str:
        if self.low == self.high:
            return f"{self.low * 1000:.0f} ms per model request"
        return f"{self.low:g}–{self.high:g} s per model request (uniform, seed {self.seed})"


def responder(latency: Latency) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        found = TASK_NUMBER.search(str(messages))
        turn = 1 if any(message.get("role") == "tool" for message in messages) else 0
        time.sleep(latency.request(int(found.group(1)) if found else -1, turn))
        if turn:
            return text_reply("There are some.")
        return tool_call_reply("count_emails", {"sender": "Dana Whitfield"})

    return answer


@contextlib.contextmanager
def provider_process(latency: Latency) -> Iterator[str]:
    """The fake provider in a process of its own, as a real provider is on another machine: its HTTP
    parsing and JSON encoding would otherwise share the engine's interpreter and be charged to it."""
    ours, theirs = multiprocessing.Pipe()

    def serve(conn: Any) -> None:
        with FakeOpenAI(responder(latency), max_requests=1_000_000) as fake:
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


class SeededClient:
    """The engine alone: the tests' scripted MCP client, waiting the attempt's model latency (split
    over its two simulated model turns)."""

    name = "native"

    def __init__(self, latency: Latency):
        self.latency = latency

    async def run(self, request: RunRequest) -> RunnerOutput:
        from fakes.mcp_runner import ClientRunner

        found = TASK_NUMBER.search(request.prompt)
        delay = self.latency.attempt(int(found.group(1)) if found else -1) / 2
        script = lambda request: [("count_emails", {"sender": "Dana Whitfield"})]  # noqa: E731
        return await ClientRunner(script, delay_s=delay).run(request)


def run(config: Config, out: Path, numbers: Sequence[int], concurrency: int, runner: Any) -> float:
    """One process's run of these tasks; returns its wall time."""
    started = time.perf_counter()
    run_phase1(
        config,
        out,
        [Task(task_id=f"task-{n:05d}", prompt=PROMPT.format(n), task_type="deterministic") for n in numbers],
        [ProviderSpec(provider="fake", model="fake-model")],
        concurrency=concurrency,
        runner_for=lambda spec: runner(),
        progress=False,
    )
    return time.perf_counter() - started


def shares(numbers: Sequence[int], concurrency: int, processes: int) -> list[tuple[list[int], int]]:
    """Each process's tasks (every `processes`-th, in plan order) and slots (C split as evenly as can be)."""
    return [
        (list(numbers[k::processes]), concurrency // processes + (1 if k < concurrency % processes else 0))
        for k in range(processes)
    ]


def run_forked(config: Config, out: Path, numbers: Sequence[int], concurrency: int, runner: Any,
               processes: int) -> float:  # fmt: skip
    """The same tasks over `processes` forked processes, each with its share and a run folder of its own."""
    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    children = [
        context.Process(target=run, args=(config, out / f"process-{k}", share, slots, runner))
        for k, (share, slots) in enumerate(shares(numbers, concurrency, processes))
    ]
    for child in children:
        child.start()
    for child in children:
        child.join()
    took = time.perf_counter() - started
    failed = [child.exitcode for child in children if child.exitcode != 0]
    if failed:
        raise SystemExit(f"a forked process failed (exit codes {failed})")
    return took


def makespan(durations: Sequence[float], slots: int) -> float:
    """Wall time of attempts of these durations, each slot taking the next in order as soon as it is free."""
    free = [0.0] * max(1, min(slots, len(durations)))
    for duration in durations:
        heapq.heappush(free, heapq.heappop(free) + duration)
    return max(free)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        help="seconds every model request waits (e.g. 0.2, the fast mode); default: 1-3 s, uniform, seeded",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the default latencies")
    parser.add_argument("--runs", type=int, default=3, help="measurements of each; medians are reported")
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="forked processes for (b); default: usable CPUs, at most --concurrency",
    )
    parser.add_argument(
        "--runner",
        choices=["native", "client"],
        default="native",
        help="native: pydantic-ai agent and the fake provider; client: the engine alone, with a scripted "
        "MCP client that waits the model latency",
    )
    opts = parser.parse_args()
    latency = Latency(1.0, 3.0, opts.seed) if opts.latency is None else Latency(opts.latency, opts.latency)
    processes = opts.processes or max(1, min(len(os.sched_getaffinity(0)), opts.concurrency, opts.tasks))
    runner = NativeRunner if opts.runner == "native" else (lambda: SeededClient(latency))
    numbers = list(range(opts.tasks))
    with tempfile.TemporaryDirectory() as tmp, provider_process(latency) as provider_url:
        root = Path(tmp)
        workdir = root / "emailindex"
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
            run(config, root / "warmup", [WARMUP_TASK], 1, runner)  # imports, first connections
            extras, in_one, forked = [], [], []
            for index in range(opts.runs):
                single = SINGLE_TASK + index
                alone = run(config, root / f"single-{index}", [single], 1, runner)
                extras.append(alone - latency.attempt(single))
                in_one.append(run(config, root / f"one-{index}", numbers, opts.concurrency, runner))
                forked.append(
                    run_forked(config, root / f"forked-{index}", numbers, opts.concurrency, runner, processes)
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
        statuses = [
            read_trace(path).status
            for pattern in ("one-*/traces/*.json", "forked-*/*/traces/*.json")
            for path in root.glob(pattern)
        ]
    expected = 2 * opts.runs * opts.tasks
    extra, one, spread = (statistics.median(values) for values in (extras, in_one, forked))
    durations = [latency.attempt(n) for n in numbers]
    ideal_one = makespan([d + extra for d in durations], opts.concurrency)
    ideal_forked = max(
        makespan([latency.attempt(n) + extra for n in share], slots)
        for share, slots in shares(numbers, opts.concurrency, processes)
    )
    bound = makespan(durations, opts.concurrency)
    waves = math.ceil(opts.tasks / opts.concurrency)
    gain = 100 * (one - spread) / one
    net = 100 * (1 - (spread / ideal_forked) / (one / ideal_one))
    decision = "worker processes" if max(gain, net) > THRESHOLD else "one process"
    chosen = spread / ideal_forked if decision == "worker processes" else one / ideal_one
    completed = statuses.count("completed")

    print(
        f"{opts.runner} runner: {opts.tasks} tasks, concurrency {opts.concurrency}, {latency}; "
        f"medians of {opts.runs} runs; {completed}/{expected} attempts completed"
    )
    print(
        f"one attempt alone: {extra:.2f} s beyond its model latency; mean model latency per attempt "
        f"{statistics.mean(durations):.2f} s; {waves} waves"
    )
    print(
        f"(a) one process:         wall {one:6.2f} s, ideal {ideal_one:6.2f} s -> ratio {one / ideal_one:.3f}"
    )
    print(
        f"(b) {processes} forked processes: wall {spread:6.2f} s, ideal {ideal_forked:6.2f} s -> ratio "
        f"{spread / ideal_forked:.3f}"
    )
    print(
        f"model latency alone (lower bound): {bound:.2f} s -> (a) {one / bound:.3f}, (b) {spread / bound:.3f}"
    )
    print(
        "walls per run: (a) "
        + ", ".join(f"{v:.2f}" for v in in_one)
        + "; (b) "
        + ", ".join(f"{v:.2f}" for v in forked)
    )
    print(
        f"workers gain {gain:.1f} % of wall time, {net:.1f} % net of their fixed split of the tasks "
        f"(threshold {THRESHOLD:g} %): {decision}"
    )
    sys.exit(0 if completed == expected and chosen <= TARGET else 1)


if __name__ == "__main__":
    main()
