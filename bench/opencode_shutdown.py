"""Benchmark: one-task opencode runs in a row, counting runs halted by opencode's own shutdown.

opencode 1.x ends its MCP servers itself: as it exits it sends SIGTERM to every
descendant of the process it launched (found with `pgrep -P`), which behind the
capture proxy is the server under test, and then closes the proxy's stdin. The
server's death can reach the proxy first; before the proxy told this apart from
a crash (capture/stdio_proxy.py), that halted about one healthy run in three to
eight with "the server was killed by signal SIGTERM while the agent was
connected".

Each run here is a whole Phase 1 run of one task (`run_phase1`), one after
another: the real opencode CLI, its own home folder, the scripted
OpenAI-compatible model of tests/fakes (one `echo` call, then a final answer)
and tests/servers/capture_server.py over stdio behind the capture proxy.
Printed per run: `ok` or the halt, and whether the server's stop reached the
proxy before opencode let go (the race that used to halt); then the totals.
Exits 1 if any run halted or did not complete. Target: 0 halts.

Run: python bench/opencode_shutdown.py [--runs 20]   (needs opencode on PATH or $MCPIPECHEKR_OPENCODE)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fakes.agent_cli import INSTALL, isolated_home  # noqa: E402
from fakes.agent_scenarios import ECHO_TASK, capture_server_config, openai_call_then_answer  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402

from mcpipechekr.artifacts.journal import read_journal  # noqa: E402
from mcpipechekr.artifacts.trace import read_trace  # noqa: E402
from mcpipechekr.errors import ServerHalt  # noqa: E402
from mcpipechekr.providers import ProviderSpec  # noqa: E402
from mcpipechekr.runners.cliagent import AgentCliMissing, find_cli  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.runners.opencode import INSTALL_HINT, OPENCODE_ENV_VAR, OpencodeRunner  # noqa: E402


def one_run(folder: Path, binary: str, base_url: str) -> tuple[str, bool]:
    """One Phase 1 run of the echo task; returns (outcome, whether the server's stop was seen first)."""
    runner = OpencodeRunner(binary=binary, env=isolated_home(folder / "home"))
    try:
        (path,) = run_phase1(
            capture_server_config({"fake": {"base_url": base_url}}),
            folder / "run",
            [ECHO_TASK],
            [ProviderSpec(provider="fake", model="fake-model")],
            runner_for=lambda spec: runner,
            progress=False,
        )
    except ServerHalt as exc:
        return f"HALT: {exc.message.splitlines()[0]}", False
    trace = read_trace(path)
    (journal,) = (folder / "run" / "journals").glob("*.jsonl")
    exited = [record for record in read_journal(journal) if record.event == "server_exited"]
    seen_first = any((record.detail or "").startswith("the agent stopped the server") for record in exited)
    outcome = "ok" if trace.status == "completed" else f"{trace.status}: {trace.status_reason}"
    return outcome, seen_first


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20, help="one-task runs in a row (default 20)")
    opts = parser.parse_args()
    try:
        binary = find_cli("opencode", OPENCODE_ENV_VAR, INSTALL_HINT)
    except AgentCliMissing as exc:
        print(f"{exc.message} (for development: {INSTALL})", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="bench-opencode-shutdown-"))
    failed = seen_first = 0
    started = time.monotonic()
    try:
        with FakeOpenAI(openai_call_then_answer("cap_", "echo", {"text": "hi"})) as fake:
            for number in range(1, opts.runs + 1):
                run_started = time.monotonic()
                outcome, first = one_run(root / f"run-{number:03d}", binary, fake.base_url)
                failed += outcome != "ok"
                seen_first += first
                note = "  (the server's stop reached the proxy first)" if first else ""
                print(
                    f"run {number:3d}  {time.monotonic() - run_started:5.1f} s  {outcome}{note}", flush=True
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{opts.runs} runs in {time.monotonic() - started:.0f} s: {failed} halted or not completed; "
        f"in {seen_first} the server's stop reached the proxy before opencode let go "
        "(each a false halt before the proxy told a shutdown from a crash)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
