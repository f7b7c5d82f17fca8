"""Fixtures shared by the whole suite: the bundled example server, emailindex, and its archive.

Building the archive takes about a second, so it is built once per session, into a temporary
folder (never into examples/), by the example's own command line, exactly as a user would.
Under pytest-xdist each worker is a session of its own and builds its own archive: a second
each, cheaper than sharing one file between processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from mcp import StdioServerParameters

from mcpipechekr.findings.home import HOME_ENV, Home

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # Started as a background job without job control (`nohup sh -c '… &'`), the suite inherits an
    # ignored SIGINT, and so would every command a test starts: Python then never raises
    # KeyboardInterrupt, and the Ctrl-C tests would test the launcher, not the project. A handler here
    # makes each child start with SIGINT at its default again (exec resets handlers, not SIG_IGN).
    signal.signal(signal.SIGINT, signal.default_int_handler)

EMAILINDEX_DIR = Path(__file__).resolve().parents[1] / "examples" / "emailindex"


def build_emailindex_archive(out: Path) -> Path:
    """Run `python archive.py --out OUT` in the example folder; return OUT."""
    subprocess.run(
        [sys.executable, "archive.py", "--out", str(out)],
        cwd=EMAILINDEX_DIR,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return out


SLOWEST_FIRST = [
    "test_fix_real_agents_failures.py",
    "test_loop_e2e.py",
    "test_split_loop.py",
    "test_fault_injection.py",
    "test_report.py",
    "test_runner_opencode.py",
    "test_time_to_value.py",
    "test_pipeline.py",
    "test_stops.py",
    "test_review_web_loop.py",
    "test_check_real_servers.py",
    "test_runner_opencode_doit.py",
    "test_runner_opencode_serve.py",
    "test_fix_real_agents.py",
    "test_own_server_e2e.py",
    "test_project_folder.py",
    "test_run_state.py",
    "test_fix_interrupted.py",
]
"""Test modules that take longest (their tests and module fixtures together, as `--durations` shows
them), slowest first, as measured on a 2-core machine. Out of date, the order costs minutes, never a
failure: `.ci/run` lists the 15 slowest tests at its end."""


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, hand out the work in the order collected (see pytest_collection_modifyitems).

    Why: by default xdist hands out the groups with the most tests first, whatever they cost, and a
    minute-long end-to-end group picked up last runs alone while the other workers idle.
    """
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's --loadscope-reorder, on by default
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of SLOWEST_FIRST run first, in that order, then those with a `slow` test, then the rest;
    each module's tests still together and in their order.

    Why: under pytest-xdist (the README's test command) the slowest work must start first for the
    short tests to fill the gaps around it. No test depends on this order.
    """
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}

    def rank(item: pytest.Item) -> int:
        if item.path.name in SLOWEST_FIRST:
            return SLOWEST_FIRST.index(item.path.name)
        return len(SLOWEST_FIRST) + (item.path not in slow)

    items.sort(key=rank)


@pytest.fixture(scope="session")
def build_emailindex() -> Callable[[Path], Path]:
    """Build another archive at a given path (each build takes about a second)."""
    return build_emailindex_archive


@pytest.fixture(scope="session")
def emailindex_dir() -> Path:
    """The example server's folder (server.py, archive.py, fixes/). Copy it before changing anything."""
    return EMAILINDEX_DIR


@pytest.fixture(scope="session")
def emailindex_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One archive for the whole session. Treat it as read-only: every test sees the same file."""
    return build_emailindex_archive(tmp_path_factory.mktemp("emailindex") / "archive.db")


@pytest.fixture(scope="session")
def emailindex_env(emailindex_db: Path) -> dict[str, str]:
    """The environment for an emailindex process that uses the shared archive."""
    return {**os.environ, "EMAILINDEX_DB": str(emailindex_db)}


@pytest.fixture(scope="session")
def emailindex_stdio(emailindex_dir: Path, emailindex_env: dict[str, str]) -> StdioServerParameters:
    """How to launch emailindex over stdio: `async with mcp.Client(emailindex_stdio) as client: ...`."""
    return StdioServerParameters(
        command=sys.executable, args=["server.py"], env=emailindex_env, cwd=str(emailindex_dir)
    )


CLOCK_ENV = "MCPIPECHEKR_TEST_CLOCK"


@pytest.fixture(scope="session", autouse=True)
def shifted_clock() -> Iterator[None]:
    """With $MCPIPECHEKR_TEST_CLOCK set (an ISO date-time), this process's clock starts there and ticks.

    How the suite shows it depends on no date: run it with the clock in another
    year (and TZ set to a far time zone), e.g.
    `MCPIPECHEKR_TEST_CLOCK=2031-07-14T01:30:00+14:00 TZ=Pacific/Kiritimati pytest`.
    Subprocesses keep the real clock.
    """
    start = os.environ.get(CLOCK_ENV)
    if not start:
        yield
        return
    global _clock_shift
    shifted = datetime.fromisoformat(start)
    _clock_shift = shifted - datetime.now(UTC)
    with time_machine.travel(shifted, tick=True):
        yield


_clock_shift: timedelta | None = None


@pytest.fixture(autouse=True)
def _real_clock_for_subprocess_clock(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `subprocess_clock` compares its subprocesses' timestamps (the real clock) with its
    own: under a shifted clock it runs on the real one again, which is what it would see on any day."""
    if _clock_shift is None or request.node.get_closest_marker("subprocess_clock") is None:
        yield
        return
    with time_machine.travel(datetime.now(UTC) - _clock_shift, tick=True):
        yield


FROZEN_NOW = datetime(2031, 7, 14, 23, 30, tzinfo=UTC)
"""The frozen clock's instant: another year, and a date that differs between UTC and most time zones."""


@pytest.fixture
def frozen_clock() -> Iterator[Callable[[datetime], None]]:
    """Stop this process's clock (datetime, date, time) for the test; call it to move the clock.

    A test whose expectations name a date or time freezes the clock instead of
    reading it, so it passes on any day, in any time zone. The clock starts at
    FROZEN_NOW; subprocesses keep the real clock.
    """
    with time_machine.travel(FROZEN_NOW, tick=False) as traveller:
        yield traveller.move_to


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A findings home of the test's own: $MCPIPECHEKR_HOME names it, the test's folder is the working
    directory, and the findings test server's switches start unset (the suite's environment may hold them)."""
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for name in ("FINDINGS_BROKEN", "FINDINGS_FAIL_EVERY"):
        monkeypatch.delenv(name, raising=False)
    return Home.resolve()
