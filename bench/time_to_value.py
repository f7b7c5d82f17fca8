"""Benchmark: from an empty folder to a priced bug report on a published-style server, in three commands.

The server is tests/servers/slow_notes: a knowledge base over markdown notes,
installed as a package into a virtual environment of its own (no checkout),
its data under a HOME given with `--env`, and `--start-s` seconds (20 by
default) to start. From an empty folder, as a new user would:

    mcpipechekr init --command …/bin/slow-notes-mcp --env HOME=… --env SLOW_NOTES_START_S=20
    mcpipechekr tasks propose
    doit baseline loop            # demo models, no terminal: stops at the review

It prints each command's wall time and how many times it started the server
(the server logs every start), the time from the first command to
bug_report.json, and the baseline measured in the same run: one bare start of
the server (spawn to the answer of tools/list through mcp.Client), so the
total reads as a number of starts. Targets: 3 commands, no hand edit, at most
180 s on two cores. Exits 1 when a target is missed or no bug report came out.

Run: python bench/time_to_value.py [--start-s 20] [--deps registry|here] [--keep DIR]
(`--deps registry`, the default, installs the server's dependencies from the package index as a user
would; `here` reuses this interpreter's, offline.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.packaged_server import install_slow_notes, newcomer_commands  # noqa: E402

TARGET_S = 180.0
TARGET_COMMANDS = 3


def bin_of(name: str) -> str:
    """This installation's script (`.venv/bin/mcpipechekr`), else the one on PATH."""
    ours = Path(sys.executable).parent / name
    return str(ours) if ours.exists() else name


def starts(home: Path) -> int:
    log = home / ".slow-notes" / "starts.log"
    return len(log.read_text().split()) if log.exists() else 0


def bare_start(script: Path, home: Path, start_s: float) -> float:
    """Spawn the server and list its tools with a bare mcp.Client: the floor every start costs."""
    import anyio
    from mcp import Client, StdioServerParameters

    async def once() -> float:
        began = time.monotonic()
        env = {**os.environ, "HOME": str(home), "SLOW_NOTES_START_S": str(start_s)}
        async with Client(StdioServerParameters(command=str(script), env=env)) as client:
            await client.list_tools()
        return time.monotonic() - began

    return anyio.run(once)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--start-s", type=float, default=20.0, help="Seconds the server takes to start.")
    parser.add_argument("--deps", choices=("registry", "here"), default="registry")
    parser.add_argument("--keep", type=Path, help="Work in this folder and leave it (default: a temp one).")
    opts = parser.parse_args()

    root = opts.keep or Path(tempfile.mkdtemp(prefix="ttv-"))
    if opts.keep is not None:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
    try:
        print(f"installing the server as a package into {root / 'server-venv'} (deps: {opts.deps})")
        script = install_slow_notes(root / "server-venv", deps=opts.deps)
        home, project = root / "home", root / "project"
        home.mkdir()
        project.mkdir()
        floor = bare_start(script, root / "bare-home", opts.start_s)
        print(f"baseline: one bare start of the server (spawn to tools/list): {floor:.1f} s")

        commands = [[bin_of(argv[0]), *argv[1:]] for argv in newcomer_commands(script, home, opts.start_s)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        epoch = time.time()  # bug_report.json's mtime is on this clock
        rows = []
        for argv in commands:
            before, started = starts(home), time.monotonic()
            done = subprocess.run(
                argv, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
            )
            rows.append((argv, done.returncode, time.monotonic() - started, starts(home) - before))
            (root / f"step{len(rows)}.log").write_text(done.stdout + done.stderr)
        reports = sorted(project.glob("runs/run-*/bug_report.json"))
        to_report = reports[-1].stat().st_mtime - epoch if reports else None
    finally:
        if opts.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    print(f"\n{'command':<40} {'exit':>4} {'wall':>8} {'server starts':>14}")
    for argv, code, wall, count in rows:
        shown = " ".join([Path(argv[0]).name, *argv[1:3]])
        print(f"{shown:<40} {code:>4} {wall:>7.1f}s {count:>14}")
    total = sum(wall for _, _, wall, _ in rows)
    print(f"\ncommands: {len(rows)} (target {TARGET_COMMANDS}), hand edits: 0")
    if to_report is None:
        print("no bug_report.json was written: FAIL")
        return 1
    print(f"wall time to bug_report.json: {to_report:.1f} s (target <= {TARGET_S:g} s)")
    print(f"all three commands, to the review's stop: {total:.1f} s")
    print(f"in bare starts of the server: {to_report / floor:.1f}")
    ok = len(rows) == TARGET_COMMANDS and to_report <= TARGET_S and rows[0][1] == 0 and rows[1][1] == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
