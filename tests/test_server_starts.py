"""Slow servers: each start is measured, a server measured slow is allowed more, and steps share one start.

The server is tests/servers/flaky_start_server.py with a start delay: it
records each start (`started-<pid>` in its folder), which is how the tests
count them. Its delay comes from its environment, which is not part of what
identifies a launch, so a test can make the same launch slower.
"""

from __future__ import annotations

import sys
from pathlib import Path

import git
import pytest
from fakes.agent_cli import process_alive

from mcpipechekr.config import Config, HealthConfig, PathsConfig, ServerConfig
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server import kept
from mcpipechekr.server.lifecycle import server_under_test
from mcpipechekr.server.starts import ALLOWANCE_FACTOR, start_allowance, start_profile, starts_path

SERVER = Path(__file__).parent / "servers" / "flaky_start_server.py"


def config(tmp_path: Path, delay_s: float, timeout_s: float, repo: Path | None = None) -> Config:
    server = ServerConfig(
        name="slow",
        command=sys.executable,
        args=[str(SERVER)],
        env={"FLAKY_DIR": str(tmp_path / "starts"), "FLAKY_DELAY_S": str(delay_s)},
        health=HealthConfig(timeout_s=timeout_s),
        repo=str(repo) if repo is not None else None,
    )
    return Config(server=server, paths=PathsConfig(home=tmp_path / "home").resolve(tmp_path))


def started(tmp_path: Path) -> int:
    return len(list((tmp_path / "starts").glob("started-*")))


def test_a_start_past_the_limit_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ServerHalt) as caught, server_under_test(config(tmp_path, delay_s=5, timeout_s=1)):
        pass
    assert "did not answer within 1s (server.health.timeout_s" in caught.value.message
    assert "raise it in config.yaml" in caught.value.message


def test_a_server_measured_slow_is_allowed_three_times_its_start(tmp_path: Path) -> None:
    first = config(tmp_path, delay_s=1.5, timeout_s=30)
    assert start_allowance(first) == 30  # never measured: the setting
    with server_under_test(first) as live:
        assert live.health is not None
        measured = live.health.elapsed_s
    profile = start_profile(starts_path(first), first.server)
    assert profile is not None and profile.wall_s == pytest.approx(measured, abs=0.01)
    assert profile.cpu_share is not None and profile.cpu_share < 1  # it slept: not CPU-bound
    assert start_allowance(first) == 30  # the setting is the floor
    # The same launch (the delay is in its environment), with a setting shorter than its starts take: the
    # measurement gives it three times its measured start.
    slower = config(tmp_path, delay_s=2.6, timeout_s=2.5)
    assert start_allowance(slower) == pytest.approx(ALLOWANCE_FACTOR * measured, abs=0.1)
    with server_under_test(slower) as live:
        assert live.health is not None and live.health.elapsed_s > 2.5
    assert started(tmp_path) == 2


def test_steps_that_share_use_one_start_while_the_source_is_the_same(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    checkout = git.Repo.init(repo)
    (repo / "README").write_text("v1\n")
    checkout.index.add(["README"])
    checkout.index.commit("first")
    settings = config(tmp_path, delay_s=0, timeout_s=20, repo=repo)

    with server_under_test(settings, share=True) as live:  # keeping is off: a start of its own
        live.list_tools()
    with server_under_test(settings, share=True) as live:
        live.list_tools()
    assert started(tmp_path) == 2

    with kept.keeping():
        for _ in range(3):  # the baseline, the tools snapshot, check
            with server_under_test(settings, share=True) as live:
                assert [tool.name for tool in live.list_tools()] == ["ticket", "lookup"]
        assert started(tmp_path) == 3
        with server_under_test(settings) as live:  # a step that does not share starts its own
            live.list_tools()
        assert started(tmp_path) == 4
        (repo / "README").write_text("v2\n")  # the source changed: the kept server is not it any more
        with server_under_test(settings, share=True) as live:
            live.list_tools()
        assert started(tmp_path) == 5
    # the block's end stopped the kept server: nothing of it is left running
    pids = [int(path.name.removeprefix("started-")) for path in (tmp_path / "starts").glob("started-*")]
    assert not [pid for pid in pids if process_alive(pid)]
