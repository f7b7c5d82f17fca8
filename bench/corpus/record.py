"""Re-record the corpus sessions with the real opencode and Claude Code CLIs against the scripted fakes.

    .venv/bin/python bench/corpus/record.py [TASK_ID ...]

For each task of sessions.yaml (or those named), runs the opencode runner (the
model served by the scripted OpenAI-compatible fake) and the Claude Code runner
(the scripted Anthropic fake), each with HOME and XDG_* in a temp folder and
the corpus server behind the capture proxy, then copies what the runner saved
(already redacted) into roomdesk/recorded/opencode/<task>.export.json and
roomdesk/recorded/claude-code/<task>.jsonl. The CLIs are found on PATH, else in
the development install (.cache/agents).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import script  # noqa: E402
from fakes.agent_cli import DEV_BIN, isolated_home  # noqa: E402
from fakes.anthropic_server import FakeAnthropic  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402

from mcpipechekr.capture import proxy_server  # noqa: E402
from mcpipechekr.config import load_config  # noqa: E402
from mcpipechekr.providers import ProviderSpec  # noqa: E402
from mcpipechekr.runners.base import RunRequest  # noqa: E402
from mcpipechekr.runners.claude_code import ClaudeCodeRunner  # noqa: E402
from mcpipechekr.runners.opencode import OpencodeRunner  # noqa: E402
from mcpipechekr.tasks import Task  # noqa: E402


def require(program: str) -> str:
    """The CLI on PATH, else the development install."""
    return shutil.which(program) or str(DEV_BIN / program)


def request(
    folder: Path, session: script.Session, provider: ProviderSpec, endpoints: dict | None
) -> RunRequest:
    """One attempt at the session's task, through the capture proxy."""
    config = load_config(script.write_project(folder, endpoints))
    journal, workdir = folder / "journal.jsonl", folder / "work"
    workdir.mkdir()
    task = Task(task_id=session.task_id, prompt=session.prompt, task_type="deterministic")
    return RunRequest(
        task=task,
        prompt=session.prompt,
        provider=provider,
        repetition=1,
        server=proxy_server(config.server, journal, config.server.name),
        journal=journal,
        workdir=workdir,
        config=config,
        timeout_s=120,
        max_requests=12,
    )


def record_opencode(root: Path, session: script.Session) -> None:
    folder = root / f"opencode-{session.task_id}"
    with FakeOpenAI(script.openai_responder(f"{script.SERVER_NAME}_")) as fake:
        req = request(
            folder,
            session,
            ProviderSpec(provider="fake", model="fake-model"),
            {"fake": {"base_url": fake.base_url}},
        )
        output = anyio.run(
            OpencodeRunner(binary=require("opencode"), env=isolated_home(folder / "home")).run, req
        )
    print(f"opencode {session.task_id}: {output.status} {output.status_reason or ''}")
    out = script.RECORDED / "opencode"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(req.workdir / "opencode-export.json", out / f"{session.task_id}.export.json")


def record_claude(root: Path, session: script.Session) -> None:
    folder = root / f"claude-{session.task_id}"
    with FakeAnthropic(script.anthropic_responder(f"mcp__{script.SERVER_NAME}__")) as fake:
        req = request(folder, session, ProviderSpec(provider="anthropic", model="claude-fake-1"), None)
        env = {
            **isolated_home(folder / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-x",
        }
        output = anyio.run(ClaudeCodeRunner(binary=require("claude"), env=env).run, req)
    print(f"claude-code {session.task_id}: {output.status} {output.status_reason or ''}")
    out = script.RECORDED / "claude-code"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(req.workdir / "claude-stream.jsonl", out / f"{session.task_id}.jsonl")


def main() -> None:
    sessions = script.load_sessions()
    chosen = sys.argv[1:] or list(sessions)
    unknown = [name for name in chosen if name not in sessions]
    if unknown:
        raise SystemExit(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(sessions)}")
    with tempfile.TemporaryDirectory() as temp:
        for task_id in chosen:
            record_opencode(Path(temp), sessions[task_id])
            record_claude(Path(temp), sessions[task_id])


if __name__ == "__main__":
    main()
