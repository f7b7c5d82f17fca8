"""How a run's agents reach the server under test: always through a capture proxy.

`proxy_server` builds the stdio command an agent launches instead of the
server (`python -m mcpipechekr.capture … -- CMD ARGS`). `CaptureHub` does it
for a whole Phase 1 run, for either transport: for a stdio server each attempt
gets its own proxy process (and so its own server process, as an agent would
start it); for an HTTP server the hub runs one `HttpCaptureProxy` and gives
each attempt its own route and journal. `async with CaptureHub(...)` runs that
proxy on the caller's event loop (Phase 1's); `with` in a thread.

Secrets stay out of agent configs and off the disk: the hub keeps the
server's environment and the values to redact in memory and hands them to each
proxy over a unix socket, once (`secrets_desk.SecretsDesk`); only the socket's
path and a one-time token are on the proxy's command line. (`secrets_dir`, a
private file, remains for callers without a hub.) The same
file names the variables the proxy withholds from the server (`withheld_env`):
the provider keys an agent CLI was handed from `.env`, which the server would
otherwise inherit through the CLI that launches the proxy.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from mcpipechekr._util.private_log import write_private
from mcpipechekr.capture.agent_server import AgentServer
from mcpipechekr.capture.http_proxy import HttpCaptureProxy
from mcpipechekr.capture.secrets_desk import SecretsDesk
from mcpipechekr.capture.warm import WarmPool
from mcpipechekr.config import Redactor, ServerConfig

SECRETS_FILE = "capture-secrets.json"


def write_secrets_file(
    folder: Path,
    env: dict[str, str],
    redactions: Sequence[tuple[str, str]],
    withheld_env: Sequence[str] = (),
) -> Path:
    """Write the proxy's secrets (server env, values to redact, names to withhold), owner-readable only."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SECRETS_FILE
    payload = {"env": env, "redact": [list(pair) for pair in redactions], "unset": list(withheld_env)}
    write_private(path, orjson.dumps(payload))
    return path


def proxy_server(
    server_config: ServerConfig,
    journal: Path,
    name: str,
    *,
    secrets_dir: Path | None = None,
    redactions: Sequence[tuple[str, str]] = (),
    stderr_log: Path | None = None,
    withheld_env: Sequence[str] = (),
    attach: Path | None = None,
    desk: SecretsDesk | None = None,
) -> AgentServer:
    """The AgentServer for a stdio server behind the capture proxy, journaling to `journal`.

    With `attach`, the proxy uses the server a `capture.warm.WarmPool` started ahead, listening there,
    instead of starting one (the command is still given: the journal names it).

    With `desk` (a `SecretsDesk`, as a Phase 1 hub has), the server's env, `redactions` and
    `withheld_env` are handed to the proxy over its socket, once, and written nowhere. With
    `secrets_dir`, the server's env, `redactions` and `withheld_env` (names
    the server must not inherit from the agent) are passed in a private file
    there; without it the env is passed in `AgentServer.env` (for tests and
    servers without secrets) and the other two are refused.
    """
    command = server_config.resolved_command()
    if command is None:
        raise ValueError(
            "proxy_server is for stdio servers; an HTTP server is proxied by CaptureHub (HttpCaptureProxy)"
        )
    args = ["-m", "mcpipechekr.capture", "--journal", str(journal)]
    if server_config.cwd:
        args += ["--cwd", server_config.cwd]
    if stderr_log is not None:
        args += ["--stderr", str(stderr_log)]
    if attach is not None:
        args += ["--attach", str(attach)]
    env: dict[str, str] = {}
    if desk is not None:  # in memory, collected once by the proxy as it starts
        payload = {"env": dict(server_config.env), "redact": [list(pair) for pair in redactions]}
        token = desk.deposit({**payload, "unset": list(withheld_env)})
        args += ["--secrets-socket", str(desk.path), "--secrets-token", token]
    elif secrets_dir is not None:
        secrets = write_secrets_file(secrets_dir, dict(server_config.env), redactions, withheld_env)
        args += ["--secrets", str(secrets)]
    elif redactions or withheld_env:
        raise ValueError("redactions and withheld variables are passed in a private file: give secrets_dir")
    else:
        env = dict(server_config.env)
    args += ["--", command, *server_config.args]
    return AgentServer(name=name, command=sys.executable, args=tuple(args), env=env)


class CaptureHub:
    """Gives each attempt of a run its proxied server and journal; a context manager for the run."""

    def __init__(
        self,
        server_config: ServerConfig,
        *,
        redactions: Sequence[tuple[str, str]] = (),
        stderr_log: Path | None = None,
        withheld_env: Sequence[str] = (),
        pool: WarmPool | None = None,
    ):
        self.server_config = server_config
        self.redactions = list(redactions)
        self.stderr_log = stderr_log
        self.withheld_env = list(withheld_env)
        self.pool = pool  # stdio servers started ahead of the attempts (`capture.warm`)
        self.http: HttpCaptureProxy | None = None
        self.desk: SecretsDesk | None = None

    def _http_proxy(self) -> HttpCaptureProxy | None:
        if not self.server_config.url:
            return None
        return HttpCaptureProxy(
            self.server_config.url, dict(self.server_config.headers), Redactor(self.redactions)
        )

    def _open_desk(self) -> None:
        if self.server_config.command:
            self.desk = SecretsDesk()

    def _close_desk(self) -> None:
        if self.desk is not None:
            self.desk.close()
            self.desk = None

    def __enter__(self) -> CaptureHub:
        """The HTTP proxy (if any) serves from a thread of its own: for callers without an event loop."""
        proxy = self._http_proxy()
        self.http = proxy.start() if proxy is not None else None
        self._open_desk()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._close_desk()
        if self.http is not None:
            self.http.stop()
            self.http = None

    async def __aenter__(self) -> CaptureHub:
        """The HTTP proxy (if any) serves on the running event loop, beside the agents it serves."""
        proxy = self._http_proxy()
        self.http = await proxy.__aenter__() if proxy is not None else None
        self._open_desk()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._close_desk()
        if self.http is not None:
            http, self.http = self.http, None
            await http.__aexit__(*exc_info)

    def agent_server(self, journal: Path, name: str, secrets_dir: Path) -> AgentServer:
        """The proxied server for one attempt, journaling to `journal`."""
        if self.http is None:
            return proxy_server(
                self.server_config,
                journal,
                name,
                secrets_dir=secrets_dir,
                redactions=self.redactions,
                stderr_log=self.stderr_log,
                withheld_env=self.withheld_env,
                attach=self.pool.take() if self.pool is not None else None,
                desk=self.desk,
            )
        return AgentServer(name=name, url=self.http.route(journal, label=journal.stem))

    def release(self, server: AgentServer) -> None:
        """End an attempt's access: an HTTP route is closed, a stdio proxy's secrets token withdrawn
        (the proxy itself ends with its agent)."""
        if self.http is not None and server.url:
            self.http.release(server.url)
        if self.desk is not None and "--secrets-token" in server.args:
            self.desk.withdraw(server.args[server.args.index("--secrets-token") + 1])
