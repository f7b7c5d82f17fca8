"""Real evidence for findings tests: client sessions through the passive capture proxy, indexed, promoted.

Each session is one `mcpipechekr capture -- <server>` process talking raw
JSON-RPC, as a real client's config would start it; `index` and `promote` then
run through the CLI. The server is tests/servers/findings_server.py, broken by
FINDINGS_BROKEN=1 in the proxy's environment (the server inherits it), and its
error text repeats the argument it was given, so a planted value would leak
through any view that kept error texts or arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.cli import main
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import lifecycle_connection, upsert_finding

SERVER = Path(__file__).parent / "servers" / "findings_server.py"
SECRET = "sk-live-7f3a9c41-PLANTED"
CAPTURE = "from mcpipechekr.cli.capture_cmd import capture_command; capture_command()"


def cli(*args: str) -> Result:
    """A command in this process, as click runs it; an exception that is not the command's own answer
    (a traceback) fails the test instead of becoming an exit code."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run(*args: str) -> tuple[int, str, str]:
    """`cli`, as exit code, stdout and stderr."""
    result = cli(*args)
    return result.exit_code, result.stdout, result.stderr


def rpc(request_id: int, method: str, params: dict | None = None) -> bytes:
    """One JSON-RPC request line."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    return json.dumps(body).encode() + b"\n"


def tool_call(request_id: int, name: str, **arguments: object) -> bytes:
    """A `tools/call` request line."""
    return rpc(request_id, "tools/call", {"name": name, "arguments": arguments})


def converse(
    command: list[str], lines: list[bytes], *, env: dict[str, str] | None = None, timeout_s: float = 20
) -> tuple[list[bytes], int]:
    """Send each line, read one answer per line, close stdin; the answers and the exit code."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for line in lines:
        process.stdin.write(line)
        process.stdin.flush()
        answers.append(process.stdout.readline())
    process.stdin.close()
    return answers, process.wait(timeout=timeout_s)


def capture_session(home: Home, calls: list[tuple[str, dict]]) -> None:
    """One client session through the capture proxy, the server broken: initialize, then each
    (tool, arguments) call."""
    env = {**os.environ, "FINDINGS_BROKEN": "1"}
    command = [sys.executable, "-c", CAPTURE, "--home", str(home.root), "--", sys.executable, str(SERVER)]
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test"}}
    lines = [rpc(0, "initialize", init)]
    lines += [
        rpc(n, "tools/call", {"name": tool, "arguments": args}) for n, (tool, args) in enumerate(calls, 1)
    ]
    answers, code = converse(command, lines, env=env, timeout_s=30)
    assert all(answers) and code == 0


def promoted_lookup_finding(home: Home) -> str:
    """Two sessions whose `lookup` calls fail with the planted secret as argument; its finding's id.

    `MCPIPECHEKR_HOME` must already name `home` (the CLI reads it).
    """
    for _ in range(2):
        capture_session(
            home, [("lookup", {"key": SECRET}), ("lookup", {"key": SECRET}), ("save", {"note": SECRET})]
        )
    indexed = cli("index")
    assert indexed.exit_code == 0, indexed.output
    promoted = cli("promote")
    assert promoted.exit_code == 0, promoted.output
    assert promoted.output.startswith("promoted 1 of 1 issues"), promoted.output
    return promoted.output.split("new ", 1)[1].split()[0]


def stored_bytes(home: Home) -> bytes:
    """Every byte the home holds (journals, index, lifecycle store), to look for a planted value."""
    return b"".join(path.read_bytes() for path in sorted(home.root.rglob("*")) if path.is_file())


LOOKUP = "finding-0a0a0a0a0a0a0a0a"
"""A captured finding on the findings server's `lookup` tool, written straight into lifecycle.db."""
LOOKUP_HINT = "Catch the exception at the tool boundary and answer a tool error that says what to change."


def register_lookup(home: Home, finding_id: str = LOOKUP, **changes: object) -> Finding:
    """Store the `lookup` finding (with `changes` to its fields) in the home's lifecycle.db."""
    fields: dict[str, object] = {
        "id": finding_id,
        "origin": "captured",
        "server": "findings",
        "tool": "lookup",
        "defect_class": "unhandled_exception",
        "hint": LOOKUP_HINT,
        "severity": "high",
        "rate": 1.0,
        "score": 0.4,
        "occurrences": 6,
        "sessions": 3,
        "blast_radius": 1,
        "arg_shapes": [{"key": "string"}],
    }
    finding = Finding.model_validate({**fields, **changes})
    with lifecycle_connection(home) as conn, conn:
        upsert_finding(conn, finding)
    return finding
