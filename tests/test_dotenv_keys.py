"""API keys kept in the `.env` beside config.yaml reach every model and agent CLI, and are written nowhere.

Real parts: the scripted OpenAI-compatible server (which records the headers it
was sent), pydantic-ai's own clients, the capture proxy, `mcpipechekr run` in a
process of its own, and the real opencode CLI. The server under test is
tests/servers/capture_server.py, whose `secret` tool answers with the value of
$CAPTURE_SECRET it sees, so a test can tell whether the server inherited a key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.agent_cli import isolated_home, require_cli
from fakes.openai_server import FakeOpenAI, Reply, text_reply, tool_call_reply

from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.config import Config, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.fix.agents import resolve_agent
from mcpipechekr.llm import build_model
from mcpipechekr.providers import PROVIDER_ENV, PYDANTIC_AI_PROVIDERS, ProviderSpec, provider_env_names
from mcpipechekr.runners.engine import redaction_pairs
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.runners.opencode import OpencodeRunner
from mcpipechekr.tasks import Task

SERVER = Path(__file__).resolve().parent / "servers" / "capture_server.py"
DOTENV_KEY = "sk-dotenv-only-7c41f9e2ab55"
EXPORTED_KEY = "sk-exported-3e90d1c7aa21"
TEST_KEY_ENV = "MCPC_DOTENV_TEST_KEY"
TASK = Task(task_id="say-the-secret", prompt="What is the server's secret setting?", task_type="open_ended")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key or base URL in the process environment, whatever the machine exports."""
    for name in [*provider_env_names(), TEST_KEY_ENV, "CAPTURE_SECRET"]:
        monkeypatch.delenv(name, raising=False)


def write_project(folder: Path, config: str, dotenv: str) -> Path:
    """config.yaml and .env in `folder`; returns config.yaml's path."""
    (folder / ".env").write_text(dotenv, encoding="utf-8")
    path = folder / "config.yaml"
    path.write_text(
        f"server:\n  name: capture\n  command: python\n  args: ['{SERVER}']\n" + config,
        encoding="utf-8",
    )
    return path


def endpoint_config(base_url: str, key_env: str = TEST_KEY_ENV) -> str:
    return f"providers:\n  endpoints:\n    fake:\n      base_url: {base_url}\n      api_key_env: {key_env}\n"


def ask(model: Any) -> str:
    """One real request through pydantic-ai's client."""
    from pydantic_ai import Agent

    return Agent(model).run_sync("Say hello.").output


# --- the models we call ourselves (pydantic-ai) ----------------------------------------------------


@pytest.mark.usefixtures("no_keys")
def test_a_key_only_in_dotenv_reaches_a_configured_endpoint(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply("hello"))
        path = write_project(tmp_path, endpoint_config(fake.base_url), f"{TEST_KEY_ENV}={DOTENV_KEY}\n")
        config = load_config(path)
        assert ask(build_model(ProviderSpec(provider="fake", model="fake-model"), config)) == "hello"
    assert fake.headers[0]["authorization"] == f"Bearer {DOTENV_KEY}"
    assert TEST_KEY_ENV not in os.environ, ".env is never loaded into the process environment"


@pytest.mark.usefixtures("no_keys")
def test_a_key_only_in_dotenv_reaches_the_builtin_openai_provider(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply("hello"))
        dotenv = f"OPENAI_API_KEY={DOTENV_KEY}\nOPENAI_BASE_URL={fake.base_url}\n"
        config = load_config(write_project(tmp_path, "", dotenv))
        # openai-chat: OpenAI's provider with the chat-completions API, the one the fake speaks
        assert ask(build_model(ProviderSpec(provider="openai-chat", model="gpt-4o"), config)) == "hello"
        # openai/: the same provider behind the Responses API, built with the same key and URL
        responses = build_model(ProviderSpec(provider="openai", model="gpt-4o"), config)
        base_url = fake.base_url
    assert fake.headers[0]["authorization"] == f"Bearer {DOTENV_KEY}"
    assert (responses.client.api_key, str(responses.client.base_url)) == (DOTENV_KEY, f"{base_url}/")
    assert "OPENAI_API_KEY" not in os.environ


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize("provider", ["endpoint", "builtin"])
def test_the_environment_beats_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply("hello"))
        if provider == "endpoint":
            name, spec, config_text = (
                TEST_KEY_ENV,
                ProviderSpec(provider="fake", model="m"),
                endpoint_config(fake.base_url),
            )
        else:
            name, spec, config_text = "OPENAI_API_KEY", ProviderSpec(provider="openai-chat", model="m"), ""
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv(name, EXPORTED_KEY)
        config = load_config(write_project(tmp_path, config_text, f"{name}={DOTENV_KEY}\n"))
        ask(build_model(spec, config))
    assert fake.headers[0]["authorization"] == f"Bearer {EXPORTED_KEY}"
    assert config.environ[name] == config.provider_env()[name] == EXPORTED_KEY
    assert config.provider_env_from_dotenv() == []  # nothing of .env's is handed on


@pytest.mark.usefixtures("no_keys")
def test_a_key_in_neither_says_where_it_is_looked_for(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, endpoint_config("http://127.0.0.1:9/v1"), ""))
    with pytest.raises(UserError) as info:
        build_model(ProviderSpec(provider="fake", model="m"), config)
    assert info.value.message.startswith(
        f"provider fake/m needs an API key in ${TEST_KEY_ENV}: export it, or "
    )
    assert f"add `{TEST_KEY_ENV}=...` to " in info.value.message and ".env" in info.value.message
    with pytest.raises(UserError, match=r"needs an API key in \$ANTHROPIC_API_KEY"):
        build_model(ProviderSpec(provider="anthropic", model="claude-sonnet-4-6"), config)


@pytest.mark.usefixtures("no_keys")
def test_dotenv_values_and_keys_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", EXPORTED_KEY)
    dotenv = f"OPENAI_API_KEY={DOTENV_KEY}\nDEBUG=1\n"
    config = load_config(write_project(tmp_path, "", dotenv))
    pairs = dict(redaction_pairs(config))
    assert pairs[DOTENV_KEY] == "${OPENAI_API_KEY}" and pairs[EXPORTED_KEY] == "${ANTHROPIC_API_KEY}"
    assert config.redactor.redact(f"key {DOTENV_KEY}, 1 call") == "key ${OPENAI_API_KEY}, 1 call"
    dump = json.dumps(config.redacted_dump())
    assert DOTENV_KEY not in dump and '"health": {"timeout_s": 60.0, "min_tools": 1}' in dump  # `1` kept


def test_the_key_table_matches_the_installed_pydantic_ai(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each provider said to need a key refuses to build without it and builds with it."""
    import warnings

    from pydantic_ai.providers import infer_provider_class

    assert set(PYDANTIC_AI_PROVIDERS) - set(PROVIDER_ENV) == {
        "bedrock",
        "litellm",
    }  # they read no key of their own
    for name in provider_env_names():
        monkeypatch.delenv(name, raising=False)
    checked = 0
    for provider, entry in PROVIDER_ENV.items():
        if not entry.key_required:
            continue
        try:
            provider_class = infer_provider_class(provider)
        except ImportError:  # its SDK is an optional extra not installed here
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated providers still build
            with pytest.raises(Exception, match=entry.keys[0]):
                provider_class()
            monkeypatch.setenv(entry.keys[0], "sk-table-check-000000")
            try:
                provider_class()
            except ImportError:  # builds its client from an optional extra not installed here
                continue
            finally:
                monkeypatch.delenv(entry.keys[0])
        checked += 1
    assert checked >= 15


# --- a whole run: manifest, journals, traces, logs -------------------------------------------------


def _leaking_model(key: str) -> FakeOpenAI:
    """A model that passes the key to a tool and repeats it in its answer: the worst case for redaction."""

    def respond(body: dict[str, Any]) -> Reply:
        if not any(message.get("role") == "tool" for message in body.get("messages") or []):
            return tool_call_reply("echo", {"text": f"my key is {key}"})
        return text_reply(f"The key I used is {key}.")

    return FakeOpenAI(respond)


def files_with(folder: Path, needle: str, *, skip: tuple[str, ...] = (".env",)) -> list[Path]:
    data = needle.encode()
    return [
        path
        for path in folder.rglob("*")
        if path.is_file() and path.name not in skip and data in path.read_bytes()
    ]


@pytest.mark.slow
def test_a_run_with_a_dotenv_key_writes_it_nowhere(tmp_path: Path) -> None:
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n  - task_id: say-the-secret\n    prompt: Echo something.\n    task_type: open_ended\n"
    )
    clean = {
        key: value for key, value in os.environ.items() if key not in {*provider_env_names(), TEST_KEY_ENV}
    }
    with _leaking_model(DOTENV_KEY) as fake:
        path = write_project(tmp_path, endpoint_config(fake.base_url), f"{TEST_KEY_ENV}={DOTENV_KEY}\n")
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcpipechekr",
                "run",
                "--config",
                str(path),
                "--phase1-provider",
                "fake/m",
            ],
            capture_output=True,
            text=True,
            timeout=240,
            env=clean,
            cwd=tmp_path,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert {headers["authorization"] for headers in fake.headers} == {f"Bearer {DOTENV_KEY}"}
    (run_dir,) = (tmp_path / "runs").iterdir()
    (trace_path,) = (run_dir / "traces").glob("*.json")
    trace = read_trace(trace_path)
    assert trace.status == "completed"
    assert trace.final_answer == f"The key I used is ${{{TEST_KEY_ENV}}}."
    (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert call.arguments == {"text": f"my key is ${{{TEST_KEY_ENV}}}"}
    assert {"manifest.json", "traces", "journals"} <= {path.name for path in run_dir.iterdir()}
    assert files_with(tmp_path, DOTENV_KEY) == []  # runs/ and .mcpipechekr/ (logs, findings) alike
    assert DOTENV_KEY not in result.stdout + result.stderr


# --- agent CLIs: the opencode runner and the fix agents --------------------------------------------


@pytest.mark.slow
@pytest.mark.usefixtures("no_keys")
def test_opencode_gets_a_dotenv_key_and_the_server_does_not(tmp_path: Path) -> None:
    """The key reaches opencode (the fake sees it) but not the server opencode launches (via the proxy)."""
    binary = require_cli("opencode", "MCPIPECHEKR_OPENCODE")

    def respond(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return text_reply("a title")  # a request besides the task's
        if not any(message.get("role") == "tool" for message in body.get("messages") or []):
            return tool_call_reply("capture_secret", {})
        return text_reply(f"Done; my key is {DOTENV_KEY}.")

    # The endpoint's key is named CAPTURE_SECRET, the variable the server's `secret` tool reports.
    with FakeOpenAI(respond) as fake:
        path = write_project(
            tmp_path,
            endpoint_config(fake.base_url, "CAPTURE_SECRET") + "timeouts: {task_s: 120}\n",
            f"CAPTURE_SECRET={DOTENV_KEY}\n",
        )
        config = load_config(path)
        runner = OpencodeRunner(binary=binary, env=isolated_home(tmp_path / "home"))
        (trace_path,) = run_phase1(
            config,
            tmp_path / "run",
            [TASK],
            [ProviderSpec(provider="fake", model="fake-model")],
            runner_for=lambda spec: runner,
            progress=False,
        )
    task_headers = [
        headers for headers, body in zip(fake.headers, fake.requests, strict=True) if body.get("tools")
    ]
    assert task_headers and {h["authorization"] for h in task_headers} == {f"Bearer {DOTENV_KEY}"}
    trace = read_trace(trace_path)
    assert trace.status == "completed", trace.status_reason
    (call,) = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert (call.tool, call.is_error) == ("secret", False)
    assert call.result_content == [] or call.result_content[0].get("text", "") == ""  # withheld
    assert trace.final_answer == "Done; my key is ${CAPTURE_SECRET}."
    assert files_with(tmp_path / "run", DOTENV_KEY) == []  # (opencode's own session store is its business)


@pytest.mark.usefixtures("no_keys")
def test_a_fix_agent_gets_a_dotenv_key_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    config_text = (
        f"  repo: {repo}\n"
        "fix:\n"
        "  agent: shell\n"
        '  command: printf \'%s %s\' "$OPENAI_API_KEY" "$ANTHROPIC_API_KEY" > seen.txt\n'
    )
    dotenv = f"OPENAI_API_KEY={DOTENV_KEY}\nANTHROPIC_API_KEY=sk-ant-from-dotenv-0000\n"
    monkeypatch.setenv("ANTHROPIC_API_KEY", EXPORTED_KEY)
    config: Config = load_config(write_project(tmp_path, config_text, dotenv))
    agent = resolve_agent(config, repo)
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text("fix it")
    result = agent.run("fix it", prompt_file, "BUG-1")
    assert (result.exit_code, result.timed_out) == (0, False), result.stderr
    assert (repo / "seen.txt").read_text() == f"{DOTENV_KEY} {EXPORTED_KEY}"
