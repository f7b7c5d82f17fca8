"""How long the server takes to start, and how long a start is therefore allowed.

A fixed start timeout fits no published server: one starts in 0.3 s, another
loads an index for 20 s, and on two loaded cores four such starts at once take
twice that. So every health check records its start (`record_start`, into
`<home>/server-starts.json`, the last five per launch), and whoever starts the
server allows it `start_allowance`: `server.health.timeout_s`, or
`ALLOWANCE_FACTOR` times the slowest recent start when that is more. The
setting stays the floor and the name messages give; a measurement only ever
raises the limit, so a server that once started slowly is not failed for it
again, and a server measured fast still gets the configured time.

`start_profile` also says whether the start is CPU-bound (the server's CPU
seconds over its wall seconds): the Phase 1 pool (`capture.warm`) starts such
servers no more than the machine's cores at a time, since overlapping them
only slows each one down.

A launch is keyed by the server's name and a hash of what starts it (command,
arguments, folder, URL, start command), never by its environment, whose values
may be secrets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts import read_model, utc_now, write_model
from mcpipechekr.artifacts.server_starts import KEPT_STARTS, ServerStarts, StartMeasure
from mcpipechekr.config import MAX_SECONDS, Config, ServerConfig
from mcpipechekr.errors import UserError

STARTS_FILE = "server-starts.json"
ALLOWANCE_FACTOR = 3.0
"""A start may take this many times the slowest recent one: room for a loaded machine and for starts that
overlap (Phase 1 runs several attempts at once, each with its own server)."""
CPU_BOUND_SHARE = 0.5
"""A start that keeps a core busy at least this share of its wall time is CPU-bound."""


@dataclass(frozen=True)
class StartProfile:
    """The slowest recent start of a server, and the share of it spent on a CPU."""

    wall_s: float
    cpu_share: float | None

    @property
    def cpu_bound(self) -> bool:
        return self.cpu_share is not None and self.cpu_share >= CPU_BOUND_SHARE


def starts_path(config: Config) -> Path:
    return config.paths.home / STARTS_FILE


def launch_key(server: ServerConfig) -> str:
    """`<name>:<hash>` of what starts the server; the environment is left out (its values may be secrets)."""
    start = server.start.model_dump(exclude={"env"}) if server.start is not None else None
    launch = {"command": server.command, "args": server.args, "cwd": server.cwd, "url": server.url}
    digest = sha256_json({**launch, "start": start}).removeprefix("sha256:")[:16]
    return f"{server.name}:{digest}"


def _read(path: Path) -> ServerStarts:
    if not path.exists():
        return ServerStarts()
    try:
        return read_model(path, ServerStarts)
    except UserError:  # a damaged file only loses the measurements: they are made again
        return ServerStarts()


def record_start(path: Path, server: ServerConfig, wall_s: float, cpu_s: float | None) -> None:
    """Add one measured start; a folder that cannot be written loses the measurement, nothing else."""
    starts = _read(path)
    key = launch_key(server)
    cpu = None if cpu_s is None else round(cpu_s, 3)
    measure = StartMeasure(at=utc_now(), wall_s=round(wall_s, 3), cpu_s=cpu)
    kept = [*starts.servers.get(key, []), measure][-KEPT_STARTS:]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_model(path, starts.model_copy(update={"servers": {**starts.servers, key: kept}}))
    except OSError:
        pass


def start_profile(path: Path, server: ServerConfig) -> StartProfile | None:
    """The slowest of the recent starts of this launch; None before it was ever measured."""
    measures = _read(path).servers.get(launch_key(server), [])
    if not measures:
        return None
    slowest = max(measures, key=lambda measure: measure.wall_s)
    share = None
    if slowest.cpu_s is not None and slowest.wall_s > 0:
        share = slowest.cpu_s / slowest.wall_s
    return StartProfile(slowest.wall_s, share)


def start_allowance(config: Config, server: ServerConfig | None = None) -> float:
    """Seconds a start of the server may take: the setting, or more when its starts were measured slower."""
    server = server or config.server
    profile = start_profile(starts_path(config), server)
    measured = ALLOWANCE_FACTOR * profile.wall_s if profile is not None else 0.0
    return min(MAX_SECONDS, max(server.health.timeout_s, round(measured, 1)))


def with_start_allowance(config: Config, server: ServerConfig | None = None) -> ServerConfig:
    """The server (default: the config's) with `health.timeout_s` raised to its `start_allowance`."""
    server = server or config.server
    allowed = start_allowance(config, server)
    if allowed == server.health.timeout_s:
        return server
    return server.model_copy(update={"health": server.health.model_copy(update={"timeout_s": allowed})})


def parallel_starts(config: Config) -> int | None:
    """How many starts of the server may overlap: the cores for a CPU-bound start, else no limit (None)."""
    profile = start_profile(starts_path(config), config.server)
    if profile is None or not profile.cpu_bound:
        return None
    return max(1, os.cpu_count() or 1)
