"""Soak: `doit loop` killed with SIGKILL at seeded random points, run again to its end, then checked.

Why: a loop runs for minutes to hours and costs money per attempt; a crash,
the out-of-memory killer or a closed laptop can end it at any instant. After
the user simply runs `doit loop` again, the project must be as sound as if
nothing had happened. tests/test_fault_injection.py checks a few fixed
points in CI; this runs many random ones.

Setup: the bundled example copied into a temporary project as a user has it
(tests/project.py), offline with its demo models, its archive built once and
its baseline made once, then copied afresh for every cycle. Each cycle drives
the loop to its end as a user without a terminal would (tests/kill_resume.py:
`doit loop`, `mcpipechekr review RUN --approve` for the first run and
`--exit` for later ones, `doit loop` again) and kills one step's whole process
group once. The cycles take the phases in turn — tracing, evaluation, review,
fix — and each kill comes a seeded random delay after its phase starts (doit's
`.  trace:`, `.  evaluate:`, `.  fix` lines; for the review, the start of
`mcpipechekr review`). A kill can land in a later phase than aimed at, or
miss when the step ends first; the table says where the kills landed. Then
the invariants of tests/fault_invariants.py are checked.

Output: one line per cycle, then per invariant how many cycles it held in,
and overall (target: all). Exit status 1 when any invariant failed in any
cycle or a cycle did not finish. Also counted, not judged: cycles where a
process the killed step started (a server, an agent) still ran 10 s after
the kill; it is then ended.

    python bench/fault_soak.py [--cycles 20] [--seed 1] [--keep DIR]

A cycle takes 40–90 s on two cores (two loop iterations with the fix between).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fault_invariants import INVARIANTS, check_invariants  # noqa: E402
from kill_resume import KillPoint, at_once, drive_to_end, task_started  # noqa: E402
from project import copy_project, doit  # noqa: E402


@dataclass(frozen=True)
class Phase:
    """A phase to aim kills at: the step that runs it, its marker, and the longest delay after the marker."""

    name: str
    step: str
    marker: str | None
    max_delay_s: float


PHASES = [
    Phase("tracing", "loop", "trace", 12.0),
    Phase("evaluation", "loop", "evaluate", 0.15),
    Phase("review", "review", None, 1.0),
    Phase("fix", "loop", "fix", 2.5),
]
"""The delays span each phase on two busy cores: eight attempts at concurrency 4 take 4–10 s (a kill
late in tracing finds some traces complete), `mcpipechekr review --approve` about a second."""


def kill_point(cycle: int, rng: random.Random) -> KillPoint:
    """The cycle's kill: phases in turn, a seeded random delay after the phase starts."""
    phase = PHASES[cycle % len(PHASES)]
    delay = round(rng.uniform(0, phase.max_delay_s), 3)
    reached = task_started(phase.marker) if phase.marker else at_once
    return KillPoint(f"{phase.name}+{delay:.2f}s", phase.step, reached, delay)  # type: ignore[arg-type]


def build_archive(out: Path) -> Path:
    """The example's archive, built by its own command line as a user would."""
    subprocess.run(
        [sys.executable, "archive.py", "--out", str(out)],
        cwd=REPO / "examples" / "emailindex",
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def prepared_project(root: Path, env: dict[str, str]) -> Path:
    """The user's project with its baseline made: the state every cycle starts from."""
    root.mkdir(parents=True)
    project = copy_project(root)
    result = doit(project, env, "baseline")
    if result.returncode != 0:
        raise SystemExit(f"doit baseline failed:\n{result.stdout}{result.stderr}")
    return project


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=20, help="kill-and-resume cycles (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill delays (default 1)")
    parser.add_argument("--keep", type=Path, help="keep every cycle's project under this folder")
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error(f"--cycles must be >= 1, got {args.cycles}")

    rng = random.Random(args.seed)
    held: Counter[str] = Counter()
    landed: Counter[str] = Counter()
    whole = unfinished = outlived = 0
    with tempfile.TemporaryDirectory(prefix="fault-soak-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "EMAILINDEX_DB": str(build_archive(Path(scratch) / "archive.db")),
            "COLUMNS": "160",
            "TERM": "dumb",
            "NO_COLOR": "1",
        }
        template = prepared_project(work / "template", env)
        print(f"{args.cycles} cycle(s), seed {args.seed}, projects under {work}")
        print(f"{'cycle':>5}  {'aimed at':<18} {'killed in':<12} {'steps':>5} {'seconds':>7}  failed")
        for cycle in range(args.cycles):
            point = kill_point(cycle, rng)
            project = Path(shutil.copytree(template, work / f"cycle-{cycle + 1:03d}", symlinks=True))
            started = time.monotonic()
            session = drive_to_end(project, env, point)
            problems = check_invariants(project, env, session.at_kill)
            seconds = time.monotonic() - started
            landed[session.killed_in or "missed"] += 1
            failed = [name for name, found in problems.items() if found]
            held.update(name for name, found in problems.items() if not found)
            if not session.finished:
                unfinished += 1
                failed.append(f"unfinished ({session.problem})")
            whole += not failed
            print(
                f"{cycle + 1:>5}  {point.label:<18} {session.killed_in or 'missed':<12} "
                f"{len(session.steps):>5} {seconds:>7.1f}  {', '.join(failed) or '-'}",
                flush=True,
            )
            for name, found in problems.items():
                for line in found[:3]:
                    print(f"{'':>7}{name}: {line}")
            for line in session.outlived_kill:
                print(f"{'':>7}still running 10 s after the kill (then ended): {line}")
            outlived += bool(session.outlived_kill)
            if args.keep is None:
                shutil.rmtree(project, ignore_errors=True)

    print()
    print(f"{'invariant':<40} {'held':>6} {'of':>4}")
    for name, says in INVARIANTS.items():
        print(f"{says:<40} {held[name]:>6} {args.cycles:>4}")
    print(f"{'cycles finished after the kill':<40} {args.cycles - unfinished:>6} {args.cycles:>4}")
    print(f"{'all of the above (overall)':<40} {whole:>6} {args.cycles:>4}")
    print()
    print(f"cycles where a process outlived the kill by 10 s: {outlived}")
    print("kills landed in: " + ", ".join(f"{phase} {count}" for phase, count in sorted(landed.items())))
    return 0 if whole == args.cycles else 1


if __name__ == "__main__":
    sys.exit(main())
