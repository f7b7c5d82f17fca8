"""`python -m mcpipechekr.capture --journal PATH [options] -- CMD ARGS…`: the stdio capture proxy.

An agent is given this command line as its MCP server. Secrets (the server's
environment values, the values to redact) are not put on the command line,
where any agent config or process listing would show them: `--secrets FILE`
names a JSON file `{"env": {NAME: VALUE}, "redact": [[VALUE, REPLACEMENT], …],
"unset": [NAME, …]}` that the harness writes, readable by its owner only,
outside the run folder. `unset` names variables of the proxy's own environment
(inherited from the agent) that the server is not given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import orjson


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcpipechekr.capture",
        description="Run an MCP stdio server behind a proxy that records every JSON-RPC message.",
    )
    parser.add_argument("--journal", type=Path, required=True, help="JSONL journal to append to.")
    parser.add_argument("--cwd", help="Working directory of the server.")
    parser.add_argument("--stderr", type=Path, help="Append the server's stderr here (default: inherit).")
    parser.add_argument("--secrets", type=Path, help="JSON file with the server's env and values to redact.")
    parser.add_argument("--secrets-socket", type=Path, help="The harness's secrets desk (a unix socket).")
    parser.add_argument("--secrets-token", help="The one-time token to collect this proxy's secrets with.")
    parser.add_argument(
        "--attach",
        type=Path,
        help="Unix socket of a server the harness started ahead (Phase 1's pool): use it, start none.",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS…: the server to run.")
    opts = parser.parse_args(argv)
    os.umask(
        0o077
    )  # the journal and the stderr log are private (`_util/private_mode.py`), without its import
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("give the server's command after `--`")

    from mcpipechekr._util.redact import Redactor
    from mcpipechekr.capture.stdio_proxy import run_stdio_proxy

    env: dict[str, str] = {}
    redactor = None
    secrets = None
    if opts.secrets_socket is not None:
        from mcpipechekr.capture.secrets_desk import collect

        try:
            secrets = collect(opts.secrets_socket, opts.secrets_token or "")
        except (OSError, ValueError) as exc:
            parser.error(f"--secrets-socket {opts.secrets_socket}: {exc}")
    elif opts.secrets is not None:
        try:
            secrets = orjson.loads(opts.secrets.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            parser.error(f"--secrets {opts.secrets}: {exc}")
    if secrets is not None:
        env = {str(key): str(value) for key, value in (secrets.get("env") or {}).items()}
        redactor = Redactor([(str(value), str(repl)) for value, repl in secrets.get("redact") or []])
        for name in secrets.get("unset") or []:
            os.environ.pop(str(name), None)  # the server inherits the rest of this process's environment
    return run_stdio_proxy(
        command,
        opts.journal,
        env=env,
        cwd=opts.cwd,
        stderr_path=opts.stderr,
        redactor=redactor,
        attach=opts.attach,
    )


def main_reporting_os_errors() -> int:
    """`main`, a refused file operation (a full disk under the journal) said in one line, exit status 2."""
    from mcpipechekr._util.stops import is_foreseeable, os_error_line

    try:
        return main()
    except OSError as exc:
        if not is_foreseeable(exc):
            raise
        print(f"mcpipechekr capture: {os_error_line(exc)}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    from mcpipechekr.capture.stdio_proxy import exit_at_once

    exit_at_once(main_reporting_os_errors())
