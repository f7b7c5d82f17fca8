"""Benchmark: `mcpipechekr index` over 100,000 call records, then after appending 1%.

Generates a home with 100,000 call records (1,000 sessions of 100 calls, one
in eight calls failing with one of a few templates, spread over 10 journals),
times a full index, appends 1% (new sessions at the end of the last journal)
and times the incremental refresh. As the baseline measured in the same run,
it times reading and JSON-parsing the same journals with nothing else.

Targets: full index ≥ 50,000 records/s; re-index after appending 1% ≤ 0.1 of
the full index's time. Records per CPU-second are printed too: on a shared
machine they say what the code costs when the wall clock also counts waiting
for a core.

The records are generated once and indexed afresh in each run.

Run: python bench/index_throughput.py [--records 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from mcpipechekr.findings.evidence.index import refresh_index
from mcpipechekr.findings.evidence.records import CallRecord, arg_shape, template_id
from mcpipechekr.findings.home import Home

T0 = datetime(2026, 11, 1, tzinfo=UTC)
TOOLS = ["search", "get_email", "count_emails", "list_threads", "send_reply"]
ERRORS = ["mail 123 not found", "invalid date '2020-13-01'", "Error executing tool get_email", "timed out"]
SESSION_CALLS = 100


def make_lines(rng: random.Random, salt: bytes, sessions: range) -> list[bytes]:
    """Call records of the given sessions, as journal lines."""
    lines = []
    for session_number in sessions:
        session = f"bench-{session_number:06d}"
        for seq in range(SESSION_CALLS):
            tool = rng.choice(TOOLS)
            failing = rng.random() < 0.125
            arguments = {"query": "x", "limit": 10} if tool == "search" else {"id": 5}
            record = CallRecord(
                event_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                session=session,
                seq=seq,
                at=T0 + timedelta(minutes=session_number, seconds=seq, microseconds=rng.randrange(1_000_000)),
                server="emailindex",
                tool=tool,
                template_id=template_id(salt, rng.choice(ERRORS), tool) if failing else None,
                arg_shape=arg_shape(arguments),  # type: ignore[arg-type]
                outcome="error" if failing else "ok",
                err_code="not_found" if failing else None,
                latency_ms=round(rng.uniform(1, 80), 3),
                request_bytes=rng.randrange(80, 400),
                response_bytes=rng.randrange(100, 4000),
            )
            lines.append(record.to_line())
    return lines


def write_journals(home: Home, lines: list[bytes], files: int) -> list[Path]:
    home.journals.mkdir(parents=True, exist_ok=True)
    per_file = -(-len(lines) // files)
    paths = []
    for number in range(files):
        path = home.journals / f"20261101T000000.{number:06d}Z-bench.jsonl"
        path.write_bytes(b"".join(lines[number * per_file : (number + 1) * per_file]))
        paths.append(path)
    return paths


def parse_only(paths: list[Path]) -> float:
    started = time.perf_counter()
    for path in paths:
        for line in path.read_bytes().split(b"\n"):
            if line:
                orjson.loads(line)
    return time.perf_counter() - started


def one_run(lines: list[bytes], extra: list[bytes]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mcpipechekr-index-bench-") as folder:
        home = Home(Path(folder))
        paths = write_journals(home, lines, files=10)
        baseline = parse_only(paths)
        cpu = time.process_time()
        full = refresh_index(home)
        full_cpu = time.process_time() - cpu
        assert full.mode == "full" and full.added == len(lines), full
        with open(paths[-1], "ab") as handle:
            handle.write(b"".join(extra))
        incremental = refresh_index(home)
        assert incremental.mode == "incremental" and incremental.added == len(extra), incremental
        assert incremental.parsed_records == len(extra)
        return {
            "full_s": full.seconds,
            "records_per_s": full.added / full.seconds,
            "records_per_cpu_s": full.added / full_cpu,
            "incremental_s": incremental.seconds,
            "ratio": incremental.seconds / full.seconds,
            "parse_only_s": baseline,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args(argv)
    rng = random.Random(7)
    salt = secrets.token_bytes(32)  # template ids only; the index never reads the salt
    sessions = opts.records // SESSION_CALLS
    lines = make_lines(rng, salt, range(sessions))
    extra = make_lines(rng, salt, range(sessions, sessions + max(1, sessions // 100)))
    results = []
    for run in range(1, opts.runs + 1):
        result = one_run(lines, extra)
        results.append(result)
        print(
            f"run {run}: full {result['full_s']:.2f} s ({result['records_per_s']:,.0f} records/s; "
            f"{result['records_per_cpu_s']:,.0f} per CPU-second; "
            f"{result['full_s'] / result['parse_only_s']:.1f}x reading+parsing alone), "
            f"after +1%: {result['incremental_s'] * 1000:.0f} ms (ratio {result['ratio']:.3f})"
        )
    rate = statistics.median(result["records_per_s"] for result in results)
    ratio = statistics.median(result["ratio"] for result in results)
    print(
        f"median: {rate:,.0f} records/s (target >= 50,000), re-index after +1%: ratio {ratio:.3f} "
        "to a full index (target <= 0.1)"
    )
    return 0 if rate >= 50_000 and ratio <= 0.1 else 1


if __name__ == "__main__":
    sys.exit(main())
