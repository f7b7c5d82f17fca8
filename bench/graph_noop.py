"""Benchmark: `doit list` and `doit trace evaluate` on unchanged inputs, against Python's own start-up.

Builds a copy of the project once (baseline, then the traces and evaluation of
all tasks of the bundled example with the demo model), then times, in the same
run:

- `python -c pass` and `python -c "import doit"`: the start-up no graph can
  go below, measured here so that the figures below compare on this machine;
- `doit list`: Python start-up, importing the graph, planning the run (reading
  config, tasks and the server repository's state): the floor any doit
  command pays;
- `doit trace evaluate` with nothing changed: the same plus doit's up-to-date
  checks on every target (content hashes of every trace, the baseline, the
  tools snapshot).

Target: both under 0.8 s. Prints the medians (wall and CPU seconds: on a busy
machine the wall time includes waiting for a core, so CPU time is the fairer
figure there) and whether each met the target.

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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from project import copy_project, doit, ran  # noqa: E402

TARGET_S = 0.8


def _cpu_of(
    run: Callable[[], subprocess.CompletedProcess[str]],
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, CPU seconds, result) of one child process; CPU time is what a busy machine cannot
    inflate."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, result


def timed(project: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one doit invocation, which must succeed and, but for `list`, build
    nothing."""
    elapsed, cpu, result = _cpu_of(lambda: doit(project, env, *args))
    if result.returncode != 0:
        raise SystemExit(f"doit {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    if args[0] != "list" and ran(result):
        raise SystemExit(
            f"doit {' '.join(args)} rebuilt {sorted(ran(result))}: inputs changed under the bench"
        )
    return elapsed, cpu


def python(project: Path, env: dict[str, str], code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `python -c CODE` in the project: the baseline start-up."""

    def run() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", code]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=True)

    elapsed, cpu, _ = _cpu_of(run)
    return elapsed, cpu


def _line(label: str, runs: list[tuple[float, float]], target: bool) -> str:
    wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
    line = f"{label:<34} median {wall:.2f} s wall, {cpu:.2f} s CPU"
    if target:
        line += (
            f"   target < {TARGET_S} s: wall {'met' if wall < TARGET_S else 'NOT met'}, "
            f"CPU {'met' if cpu < TARGET_S else 'NOT met'}"
        )
    return line


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
        start: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        load: list[tuple[float, float]] = []
        noop: list[tuple[float, float]] = []
        for _ in range(args.runs):  # in turns, so that a busy spell of the machine weighs on all four
            start.append(python(project, env, "pass"))
            bare.append(python(project, env, "import doit"))
            load.append(timed(project, env, "list"))
            noop.append(timed(project, env, "trace", "evaluate"))
    print(f"{args.runs} runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(_line("python -c pass (baseline)", start, target=False))
    print(_line('python -c "import doit" (baseline)', bare, target=False))
    print(_line("doit list (graph load)", load, target=True))
    print(_line("doit trace evaluate, unchanged", noop, target=True))


if __name__ == "__main__":
    main()
