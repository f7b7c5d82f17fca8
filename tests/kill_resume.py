"""Drive `doit loop` in a project to its end as a user without a terminal would, killing it once on the way.

Without a terminal the loop stops at each review; the user decides with
`mcpipechekr review RUN --approve` (the first run) or `--exit` (any later
one) and runs `doit loop` again, until it prints `loop finished`. One
`KillPoint` picks the step to kill (a `doit loop` or a `mcpipechekr review`)
and the moment: once its marker holds (a line doit prints as it starts a task,
a file that appears), after a delay. The kill is SIGKILL to the step's whole
process group, as a crash or the out-of-memory killer would end it: nothing
gets to clean up. The next step is simply the same command again, which is
what resuming means for a user.

Shared by tests/test_fault_injection.py (a few fixed points) and
bench/fault_soak.py (many seeded ones); the checks of what must hold afterwards
are in fault_invariants.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fault_invariants import TraceDigests, trace_digests

from mcpipechekr.artifacts import Review, read_model
from mcpipechekr.errors import UserError

TASK_STARTS = re.compile(r"^\.  ([\w-]+)", re.MULTILINE)
"""The line doit prints as it starts a task: `.  trace:<attempt>`, `.  evaluate:<run>`, `.  fix`."""

STOPPED_AT_REVIEW = re.compile(r"the loop stopped at the review of (run-\d{8}-\d{3});")
FINISHED = "loop finished:"

Marker = Callable[[Path, str], bool]
"""Whether a kill point is reached, given the project and the step's output so far."""


def task_started(name: str) -> Marker:
    """Reached once doit has started a task named `name` (or `name:<subtask>`) in this step."""
    line = re.compile(rf"^\.  {re.escape(name)}(:|\s*$)", re.MULTILINE)
    return lambda _project, output: line.search(output) is not None


def file_appeared(pattern: str) -> Marker:
    """Reached once a file matching the glob `pattern` (relative to the project) exists."""
    return lambda project, _output: next(project.glob(pattern), None) is not None


def at_once(_project: Path, _output: str) -> bool:
    """Reached as soon as the step has started."""
    return True


@dataclass(frozen=True)
class KillPoint:
    """Kill the first `step` whose `reached` marker holds, `delay_s` seconds after it first holds."""

    label: str
    step: Literal["loop", "review"]
    reached: Marker
    delay_s: float = 0.0


@dataclass
class Step:
    """One command of the session as it ran: its output, exit status, and the phase it was killed in."""

    argv: list[str]
    returncode: int
    output: str
    killed_in: str | None = None
    seconds: float = 0.0


@dataclass
class Session:
    """A project driven to the end: its steps, where the kill landed, and the traces complete at the kill."""

    steps: list[Step] = field(default_factory=list)
    killed_in: str | None = None
    at_kill: TraceDigests = field(default_factory=dict)
    finished: bool = False
    problem: str = ""
    outlived_kill: list[str] = field(default_factory=list)

    @property
    def transcript(self) -> str:
        return "\n".join(
            f"$ {' '.join(step.argv[2:])}  # exit {step.returncode}\n{step.output}" for step in self.steps
        )


def phase_of(output: str) -> str:
    """The phase the step was in: the last task doit started (`trace`, `evaluate`, `review`, `fix`, ...)."""
    starts = TASK_STARTS.findall(output)
    return starts[-1] if starts else "start-up"


def run_step(
    argv: list[str],
    project: Path,
    env: Mapping[str, str],
    kill: KillPoint | None = None,
    *,
    timeout: float = 300,
) -> Step:
    """Run one command in the project (stdin /dev/null, its own process group), killing it at `kill`."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=project,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    chunks: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: chunks.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    kill_at: float | None = None
    killed_in: str | None = None
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if now - started > timeout:
                raise TimeoutError(f"{' '.join(argv)} ran over {timeout} s:\n{''.join(chunks)[-3000:]}")
            if kill is not None and kill_at is None and kill.reached(project, "".join(chunks)):
                kill_at = now + kill.delay_s
            if kill_at is not None and now >= kill_at:
                output = "".join(chunks)
                killed_in = "review" if kill and kill.step == "review" else phase_of(output)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.01)
    except BaseException:  # a timeout, or Ctrl-C of whoever drives the session: the step goes too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    reader.join(10)
    return Step(argv, proc.wait(), "".join(chunks), killed_in, time.monotonic() - started)


def any_approved(project: Path) -> bool:
    """Whether some run of the project has been approved for the fix loop."""
    for path in (project / "runs").glob("*/review.json"):
        try:
            if read_model(path, Review).decision == "approve":
                return True
        except UserError:
            continue
    return False


def processes_in(project: Path) -> dict[int, str]:
    """Live processes working in the project (their folder or command line inside it): pid -> command."""
    found: dict[int, str] = {}
    inside = str(project.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if command and (cwd == inside or cwd.startswith(inside + "/") or inside in command):
            found[int(entry.name)] = command
    return found


def outlived(project: Path, grace_s: float = 10.0) -> list[str]:
    """Processes still working in the project `grace_s` after a kill; they are then ended, by pid."""
    deadline = time.monotonic() + grace_s
    while (left := processes_in(project)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return [f"{pid}: {command[:120]}" for pid, command in sorted(left.items())]


def loop_argv() -> list[str]:
    return [sys.executable, "-m", "doit", "loop"]


def review_argv(run_id: str, decision: Literal["approve", "exit"]) -> list[str]:
    return [sys.executable, "-m", "mcpipechekr", "review", run_id, f"--{decision}"]


def drive_to_end(
    project: Path,
    env: Mapping[str, str],
    kill: KillPoint | None = None,
    *,
    max_steps: int = 12,
    timeout: float = 300,
) -> Session:
    """Run `doit loop` and the review decisions until the loop finishes, killing one step at `kill`."""
    session = Session()
    for _ in range(max_steps):
        step = _run(session, loop_argv(), "loop", project, env, kill, timeout)
        if step.killed_in is not None:
            continue
        if step.returncode == 0 and FINISHED in step.output:
            session.finished = True
            return session
        stopped = STOPPED_AT_REVIEW.search(step.output)
        if stopped is None:
            session.problem = f"`doit loop` exited {step.returncode} without stopping at a review"
            return session
        decision: Literal["approve", "exit"] = "exit" if any_approved(project) else "approve"
        review = _run(session, review_argv(stopped.group(1), decision), "review", project, env, kill, timeout)
        if review.killed_in is None and review.returncode != 0:
            session.problem = f"`{' '.join(review.argv[2:])}` exited {review.returncode}"
            return session
    session.problem = f"the loop did not finish in {max_steps} commands"
    return session


def _run(
    session: Session,
    argv: list[str],
    kind: str,
    project: Path,
    env: Mapping[str, str],
    kill: KillPoint | None,
    timeout: float,
) -> Step:
    """Run one step of the session, with the kill armed while it has not landed and targets this kind."""
    armed = kill if kill is not None and kill.step == kind and session.killed_in is None else None
    step = run_step(argv, project, env, armed, timeout=timeout)
    session.steps.append(step)
    if step.killed_in is not None:
        _after_kill(session, project, step)
    return step


def _after_kill(session: Session, project: Path, step: Step) -> None:
    """Record where the kill landed, wait for what the killed step left running, note the complete traces."""
    session.killed_in = step.killed_in
    session.outlived_kill = outlived(project)
    session.at_kill = trace_digests(project)
