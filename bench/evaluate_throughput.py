"""Benchmark: Phase 2 on 1,000 traces of 20 tool calls each, offline.

Generates a run of 1,000 traces (8 tasks, 125 repetitions; each trace 20
calls with ~1 KB results: date-window walks, paging, an error and its
workaround, repeated calls, plus model turns), then times `evaluate_run`
(read, every analyzer, correctness, pricing, aggregation, statistics, the
narrative, writing both files) and, as the baseline measured in the same run,
reading and validating the same traces with nothing else.

Target: the whole evaluation < 5 s. Prints traces/s and the ratio to the read.

Run: python bench/evaluate_throughput.py [--traces 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from mcpipechekr.artifacts import create_run_dir, list_traces, read_trace, write_model
from mcpipechekr.artifacts.trace import ModelTurn, Trace, Usage, tool_call_from_result
from mcpipechekr.config import load_config
from mcpipechekr.evaluate import evaluate_run

T0 = datetime(2026, 12, 1, tzinfo=UTC)
TASKS = [f"task-{n}" for n in range(8)]
WORDS = "budget vendor pilot office move heating garage contract schedule review meeting".split()


def emails(rng: random.Random, count: int) -> dict:
    rows = [
        {
            "id": rng.randrange(1, 5000),
            "thread_id": f"th-{rng.randrange(999)}",
            "date": f"20{rng.randrange(12, 27)}-0{rng.randrange(1, 10)}-1{rng.randrange(0, 9)}T10:00:00",
            "sender": "someone@harborpine.com",
            "subject": " ".join(rng.choices(WORDS, k=4)),
            "snippet": " ".join(rng.choices(WORDS, k=18)),
        }
        for _ in range(count)
    ]
    return {"total": count * 3, "offset": 0, "emails": rows}


def make_calls(rng: random.Random) -> list[tuple[str, dict, dict | None, str | None]]:
    calls: list[tuple[str, dict, dict | None, str | None]] = []
    for year in range(2012, 2018):  # a date walk: 6 calls
        found = {"count": 0} if year < 2017 else {"count": 3}
        calls.append(
            (
                "count_emails",
                {"keywords": "ron", "date_from": f"{year}-01-01", "date_to": f"{year}-12-31"},
                found,
                None,
            )
        )
    args = {"keywords": "ron", "date_from": "2017-01-01", "date_to": "2017-12-31"}
    calls.append(
        (
            "query_email_database",
            {**args, "fields": ["subject"]},
            None,
            "database error: no such column: fts.rank",
        )
    )
    calls.append(("query_email_database", args, emails(rng, 4), None))
    for offset in (0, 20, 40, 60):  # paging: 4 calls
        calls.append(("query_email_database", {"keywords": "budget", "offset": offset}, emails(rng, 4), None))
    for _ in range(6):  # reads, one repeated
        calls.append(("get_email", {"email_id": rng.choice([7, 8, 9])}, emails(rng, 1)["emails"][0], None))
    calls.append(("count_emails", {"sender": "dana"}, {"count": 29}, None))
    calls.append(("count_emails", {"sender": "owen"}, {"count": 12}, None))
    return calls


def make_trace(task_id: str, repetition: int, rng: random.Random) -> Trace:
    steps = []
    for tool, arguments, result, error in make_calls(rng):
        steps.append(
            ModelTurn(
                index=len(steps),
                text=f"calling {tool}",
                usage=Usage(input_tokens=900, output_tokens=40, source="reported"),
            )
        )
        content = [{"type": "text", "text": error or json.dumps(result)}]
        steps.append(
            tool_call_from_result(
                index=len(steps), call_id=f"c{len(steps)}", tool=tool, arguments=arguments, content=content,
                structured_content=None if error else result, is_error=error is not None, latency_ms=3.0,
            )
        )  # fmt: skip
    return Trace(
        task_id=task_id, repetition=repetition, provider="bench/model", runner="native", prompt="p",
        started_at=T0, ended_at=T0, status="completed", steps=steps, final_answer="It was 29, budget review.",
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        tasks = [{"task_id": t, "prompt": "p", "task_type": "deterministic", "min_calls": 2} for t in TASKS]
        (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
        (root / "config.yaml").write_text(yaml.safe_dump({"server": {"command": "python"}}))
        config = load_config(root / "config.yaml")
        run = create_run_dir(config.paths.runs)
        for number in range(args.traces):
            trace = make_trace(TASKS[number % len(TASKS)], number // len(TASKS) + 1, rng)
            write_model(run.traces / f"{trace.task_id}__bench__r{trace.repetition:03d}.json", trace)
        calls = sum(1 for step in read_trace(list_traces(run)[0]).steps if step.kind == "tool_call")
        read_times, eval_times, eval_cpu = [], [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            for path in list_traces(run):
                read_trace(path)
            read_times.append(time.perf_counter() - start)
            start, cpu = time.perf_counter(), time.process_time()
            report = evaluate_run(config, run)
            eval_times.append(time.perf_counter() - start)
            eval_cpu.append(time.process_time() - cpu)
        read_s, eval_s = statistics.median(read_times), statistics.median(eval_times)
        print(f"traces: {args.traces} x {calls} tool calls; {len(report.bugs)} bugs; {args.runs} runs")
        print(f"evaluate_run per run: {', '.join(f'{t:.2f}' for t in eval_times)} s (the first is cold)")
        # On a shared machine the wall time includes waiting for a core; the CPU time does not.
        print(f"  of which on the CPU:  {', '.join(f'{t:.2f}' for t in eval_cpu)} s")
        print(f"read + validate only (baseline): {read_s:.2f} s  ({args.traces / read_s:,.0f} traces/s)")
        print(f"evaluate_run:                    {eval_s:.2f} s  ({args.traces / eval_s:,.0f} traces/s)")
        verdict = "met" if eval_s < 5 else "MISSED"
        print(f"ratio evaluate / read: {eval_s / read_s:.2f}x; target < 5 s: {verdict}")
    return 0 if eval_s < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
