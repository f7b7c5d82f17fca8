"""Benchmark: `doit trace evaluate` on unchanged inputs, against loading the graph alone.

Builds a copy of the project once (baseline, then the traces and evaluation of
all tasks of the bundled example with the demo model), then times, in the same
run:

- `doit list`: Python start-up, importing the graph, planning the run (reading
  config, tasks and the server repository's state): the floor any doit
  command pays;
- `doit trace evaluate` with nothing changed: the same plus doit's up-to-date
  checks on every target (content hashes of every trace, the baseline, the
  tools snapshot).

Target: the no-op rebuild well under 2 s. Prints both medians (wall and CPU
seconds: on a busy machine the wall time includes waiting for a core) and
their ratio.

Run: python bench/graph_noop.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from project import copy_project, doit, ran  # noqa: E402

TARGET_S = 2.0


def timed(project: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one doit invocation; CPU time is what a busy machine cannot inflate."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = doit(project, env, *args)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(f"doit {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    if args[0] != "list" and ran(result):
        raise SystemExit(
            f"doit {' '.join(args)} rebuilt {sorted(ran(result))}: inputs changed under the bench"
        )
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = copy_project(Path(folder))
        env = dict(os.environ)
        archive = Path(folder) / "archive.db"
        subprocess.run(
            [sys.executable, "archive.py", "--out", str(archive)],
            cwd=REPO / "examples" / "emailindex",
            check=True,
            capture_output=True,
        )
        env["EMAILINDEX_DB"] = str(archive)
        print("building once: baseline, traces and evaluation of every task ...", flush=True)
        for step in (("baseline",), ("trace", "evaluate")):
            result = doit(project, env, *step, timeout=900)
            if result.returncode != 0:
                raise SystemExit(f"doit {' '.join(step)} failed:\n{result.stdout}\n{result.stderr}")
        load = [timed(project, env, "list") for _ in range(args.runs)]
        noop = [timed(project, env, "trace", "evaluate") for _ in range(args.runs)]
    load_s, noop_s = statistics.median(w for w, _ in load), statistics.median(w for w, _ in noop)
    load_cpu, noop_cpu = statistics.median(c for _, c in load), statistics.median(c for _, c in noop)
    print(f"doit list (graph load)           median {load_s:.2f} s wall, {load_cpu:.2f} s CPU")
    print(f"doit trace evaluate, unchanged   median {noop_s:.2f} s wall, {noop_cpu:.2f} s CPU")
    print(f"ratio no-op / graph load         {noop_s / load_s:.2f} wall, {noop_cpu / load_cpu:.2f} CPU")
    print(
        f"target < {TARGET_S:.0f} s: wall {'met' if noop_s < TARGET_S else 'NOT met'}, "
        f"CPU {'met' if noop_cpu < TARGET_S else 'NOT met'} (load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
