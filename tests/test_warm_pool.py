"""The Phase 1 pool of servers started ahead (capture/warm.py) is shared by the blocks that open it in one
process, doit's trace targets in threads among them, and closed by the last of them to end."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from fakes.agent_cli import process_alive

from mcpipechekr.capture.warm import current_pool, open_pool
from mcpipechekr.config import ServerConfig

_WAITS_FOR_INPUT = "import sys; sys.stdin.read()"


def _server(tmp_path: Path) -> ServerConfig:
    return ServerConfig(command=sys.executable, args=["-c", _WAITS_FOR_INPUT], cwd=str(tmp_path))


def test_a_block_that_ends_first_leaves_the_pool_to_the_block_still_using_it(tmp_path: Path) -> None:
    server = _server(tmp_path)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        with open_pool(server, expected=1, slots=1) as pool:
            seen["first"] = pool
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with open_pool(server, expected=1, slots=1) as pool:
            seen["second"] = pool
            second_in.set()
            first_out.wait(10)
            try:  # the first block has ended: the pool is still this block's to use
                seen["socket"] = pool.take() if pool is not None else None
            except RuntimeError as exc:
                seen["socket"] = exc
            seen["processes"] = [warm.process for warm in pool._all] if pool is not None else []

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert seen["first"] is seen["second"] is not None
    assert isinstance(seen["socket"], Path), seen["socket"]
    processes = seen["processes"]
    assert processes and all(process.poll() is not None for process in processes)  # type: ignore[union-attr]
    assert not [process.pid for process in processes if process_alive(process.pid)]  # type: ignore[union-attr]
    assert current_pool(server) is None


def test_blocks_one_after_the_other_each_get_a_fresh_pool(tmp_path: Path) -> None:
    server = _server(tmp_path)
    with open_pool(server, expected=1, slots=1) as pool:
        assert current_pool(server) is pool
    assert current_pool(server) is None
    with open_pool(server, expected=1, slots=1) as again:
        assert again is not pool and again is not None
        again.take()
    assert current_pool(server) is None
