"""One start of the server for the steps of one doit run that only need it up.

`doit baseline loop` runs the baseline's reference calls, then the loop pins
the tools (`_tools`), and `doit check` checks them: each step used to start
the server and stop it again, and a server that takes 20 s to start made the
user pay that four or five times. While keeping is on (`keeping()`, which the
doit front end turns on for its run), `server_under_test(..., share=True)`
gives the steps that share (baseline, the tools snapshot, check, lint without
a snapshot, session import) one started server: the first one starts it, the
others find it running, and it is stopped when the doit run ends
(`close_kept`), or when the loop reaches its fix step, which changes the
server's code.

A server is shared only while it is the same server: the same settings and
the same source (`workspace.server_source_digest`: HEAD plus uncommitted
changes). One that halted, or whose settings or source changed, is stopped
and a new one started. Its stderr goes to the log of the step that started it
(halt messages name that file). Steps that restart the server or judge a
change (the fix loop's health checks, `verify`) never share.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.config import Config, ServerConfig

_kept: dict[str, tuple[str, Any]] = {}  # server name -> (key, the started ServerUnderTest)
_lock = threading.Lock()
_on = 0  # how many `keeping()` blocks are open in this process


@contextmanager
def keeping() -> Iterator[None]:
    """Share started servers between the steps run inside the block; stop them when the last block ends."""
    global _on
    with _lock:
        _on += 1
    try:
        yield
    finally:
        with _lock:
            _on -= 1
            last = _on == 0
        if last:
            close_kept()


def keep_until_exit() -> None:
    """Share started servers for the rest of this process (a bare `doit`, which ends with the process)."""
    global _on
    with _lock:
        _on += 1


def keeping_on() -> bool:
    """Whether servers are shared now; never in a process multiprocessing started (`doit -n N` with
    processes), whose exit skips `atexit` and would leave a kept server running."""
    return _on > 0 and multiprocessing.parent_process() is None


def _key(config: Config, server: ServerConfig) -> str:
    from mcpipechekr.server.workspace import server_source_digest

    return sha256_json({"server": server.model_dump(mode="json"), "source": server_source_digest(config)})


def shared(config: Config, server: ServerConfig, start: Callable[[], Any]) -> Any:
    """The kept server for `server` if it is still the same and running, else `start()`'s, kept."""
    key = _key(config, server)
    with _lock:
        found = _kept.get(server.name)
        if found is not None and found[0] == key and found[1].running:
            return found[1]
        stale = _kept.pop(server.name, None)
    if stale is not None:
        stale[1].stop()
    live = start()
    with _lock:
        _kept[server.name] = (key, live)
    return live


def close_kept() -> None:
    """Stop every kept server (the end of a doit run, or the loop's fix step)."""
    with _lock:
        servers = [live for _, live in _kept.values()]
        _kept.clear()
    for live in servers:
        live.stop()


atexit.register(close_kept)
