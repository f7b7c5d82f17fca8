"""doit's trace targets with the opencode runner share one `opencode serve` (runners/kept.py).

Each trace target runs one attempt, each with an event loop of its own, one after
another or in threads (`-n 2 -P thread`, as the loop runs them). Run through the real
front ends in their own processes (`mcpipechekr doit`, and a bare `doit` with the
project's dodo.py, where the server is stopped at exit), against a scripted OpenAI-compatible model and
capture_server behind the capture proxy: the opencode binary is a wrapper that notes
each `opencode serve` it starts, so the test counts the servers and checks none is
left running when doit ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.agent_cli import isolated_home, process_alive, require_cli
from fakes.agent_scenarios import CAPTURE_SERVER, DONE, openai_call_then_answer
from fakes.openai_server import FakeOpenAI

from mcpipechekr.artifacts.trace import read_trace

pytestmark = pytest.mark.slow

TASKS = ("echo-one", "echo-two", "echo-three")


def _project(root: Path, base_url: str) -> Path:
    root.mkdir(parents=True)
    config = {
        "server": {"name": "cap", "command": sys.executable, "args": [str(CAPTURE_SERVER)]},
        "providers": {"phase1": "fake/fake-model", "endpoints": {"fake": {"base_url": base_url}}},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    tasks = [
        {"task_id": task, "prompt": f"Echo 'hi' with the tool ({task}).", "task_type": "deterministic"}
        for task in TASKS
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    (root / "dodo.py").write_text("from mcpipechekr.dodo import *  # noqa: F403\n")
    return root


def _wrapper(root: Path) -> tuple[Path, Path]:
    """An `opencode` that appends the pid of each `opencode serve` to a file, then becomes opencode."""
    real = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    started = root / "serve-pids"
    wrapper = root / "opencode"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = serve ]; then echo $$ >> "{started}"; fi\nexec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, started


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "mcpipechekr", "doit", "trace", "--runner", "opencode"],
        [
            sys.executable,
            "-m",
            "mcpipechekr",
            "doit",
            "-n",
            "2",
            "-P",
            "thread",
            "trace",
            "--runner",
            "opencode",
        ],
        [sys.executable, "-m", "doit", "trace", "--runner", "opencode"],  # the dodo.py a user has
    ],
    ids=["one-after-another", "two-threads", "bare-doit"],
)
def test_the_trace_targets_share_one_opencode_server(tmp_path: Path, argv: list[str]) -> None:
    wrapper, started = _wrapper(tmp_path)
    with FakeOpenAI(openai_call_then_answer("cap_", "echo", {"text": "hi"})) as fake:
        project = _project(tmp_path / "project", fake.base_url)
        env = {
            **os.environ,
            **isolated_home(tmp_path / "home"),
            "MCPIPECHEKR_OPENCODE": str(wrapper),
            "MCPIPECHEKR_HOME": str(tmp_path / "mcpipechekr-home"),
        }
        result = subprocess.run(
            argv, cwd=project, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
    assert result.returncode == 0, result.stdout + result.stderr
    traces = [read_trace(path) for path in sorted(project.glob("runs/run-*/traces/*.json"))]
    assert sorted(trace.task_id for trace in traces) == sorted(TASKS)
    assert [(trace.status, trace.final_answer, trace.runner) for trace in traces] == [
        ("completed", DONE, "opencode")
    ] * len(TASKS)
    pids = [int(line) for line in started.read_text().split()]
    assert len(pids) == 1, f"one opencode server for the {len(TASKS)} targets, not {len(pids)}"
    assert not process_alive(pids[0]), "the server is stopped when doit ends"
