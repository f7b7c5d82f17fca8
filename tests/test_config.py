"""config.yaml: models, `${ENV}` interpolation, secrets, provider strings, server flags, error lines."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from mcpipechekr import config as config_module
from mcpipechekr import providers as providers_module
from mcpipechekr import tasks as tasks_module
from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.config import ConfigOverrides, LaunchSpec, ServerConfig, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import PYDANTIC_AI_PROVIDERS, parse_provider
from mcpipechekr.server.target import ServerFlags, resolve_server

ROOT = Path(__file__).resolve().parents[1]
FAKE_KEY = "sk-test-4f9c2a7e1b"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(path: Path, **kwargs) -> list[str]:
    with pytest.raises(ConfigFileError) as info:
        load_config(path, **kwargs)
    return [str(problem) for problem in info.value.problems]


MINIMAL = """
server:
  command: python
  args: [server.py]
"""


# --- the shipped config --------------------------------------------------------------------------


def test_root_config_targets_the_bundled_example(monkeypatch):
    monkeypatch.chdir(ROOT)
    config = load_config("config.yaml", environ={})
    server = config.server
    assert (server.name, server.command, server.args, server.transport) == (
        "emailindex",
        "python",
        ["server.py"],
        "stdio",
    )
    assert server.resolved_command() == sys.executable
    workspace = str(ROOT / ".mcpipechekr" / "workspace" / "emailindex")
    assert (server.cwd, server.repo) == (workspace, workspace)
    assert server.repo_template == str(ROOT / "examples" / "emailindex")
    assert (server.health.timeout_s, server.health.min_tools) == (30, 1)
    assert {str(config.providers.for_phase(phase)) for phase in config_module.PHASES} == {"demo"}
    assert config.paths.tasks == ROOT / "tasks.yaml"
    assert config.paths.runs == ROOT / "runs"
    assert config.paths.home == ROOT / ".mcpipechekr"
    assert config.loop.max_iterations == 3
    assert config.source == ROOT / "config.yaml"


def test_defaults_fill_everything_but_the_server(tmp_path):
    config = load_config(write(tmp_path / "config.yaml", MINIMAL), environ={})
    dump = config.model_dump(mode="json")
    assert dump["thresholds"] == {
        "tef_precision_warning": 0.7,
        "open_ended_divergence": 0.2,
        "overlap": 0.85,
        "misleading_confidence": 0.8,
    }
    assert dump["timeouts"] == {"tool_call_s": 60.0, "task_s": 600.0, "phase_s": 3600.0, "max_requests": 50}
    assert dump["loop"] == {"max_iterations": 3, "stop_when": "no_server_bugs"}
    assert dump["kpi"] == {
        "call_efficiency_ratio": 1.3,
        "correctness": 0.95,
        "selection_precision": 0.85,
        "gap_cost_falling": True,
        "regression_rate": 0.0,
    }
    assert dump["providers"] == {"endpoints": {}, **{phase: "demo" for phase in config_module.PHASES}}
    assert config.paths.tasks == tmp_path / "tasks.yaml"
    assert config.server.cwd is None  # no cwd: the process's own


# --- the python rule and paths ---------------------------------------------------------------------


def test_python_means_the_running_interpreter():
    assert LaunchSpec(command="python").resolved_command() == sys.executable
    assert LaunchSpec(command="python3").resolved_command() == sys.executable
    assert LaunchSpec(command="/usr/bin/python3.11").resolved_command() == "/usr/bin/python3.11"
    assert ServerConfig(command="node", args=["x.js"]).resolved_command() == "node"
    assert ServerConfig(command="python3").resolved_command() == sys.executable
    assert ServerConfig(url="http://127.0.0.1:1/mcp").resolved_command() is None


def test_relative_paths_resolve_against_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "proj" / "config.yaml",
        f"""
        server:
          url: http://127.0.0.1:8765/mcp
          start: {{command: python, args: [s.py], cwd: srv}}
          repo: ../repo
          repo_template: {tmp_path / "tpl"}
        paths: {{runs: out/runs}}
        """,
    )
    config = load_config("proj/config.yaml", environ={})
    assert config.server.start.cwd == str(tmp_path / "proj" / "srv")
    assert config.server.repo == str(tmp_path / "repo")
    assert config.server.repo_template == str(tmp_path / "tpl")
    assert config.paths.runs == tmp_path / "proj" / "out" / "runs"
    assert config.base_dir == tmp_path / "proj"


def test_numbers_in_args_and_env_are_strings(tmp_path):
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          command: python
          args: [server.py, --port, 8765]
          env: {WORKERS: 2}
        """,
    )
    server = load_config(path, environ={}).server
    assert server.args == ["server.py", "--port", "8765"]
    assert server.env == {"WORKERS": "2"}


# --- ${ENV} interpolation --------------------------------------------------------------------------


def test_interpolation_from_environment_dotenv_and_defaults(tmp_path):
    write(tmp_path / ".env", "FROM_DOTENV=dotenv-value\nBOTH=from-dotenv\n")
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          command: python
          args: ["${FROM_DOTENV}", "${BOTH}", "${UNSET_VAR:-fallback}", "$${LITERAL}", "${EMPTY:-was-empty}"]
          health:
            timeout_s: ${TIMEOUT:-12}
        """,
    )
    config = load_config(path, environ={"BOTH": "from-process", "EMPTY": ""})
    assert config.server.args == ["dotenv-value", "from-process", "fallback", "${LITERAL}", "was-empty"]
    assert config.server.health.timeout_s == 12


def test_unset_variable_is_an_error_with_file_line_and_name(tmp_path):
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          url: http://127.0.0.1:8765/mcp
          headers:
            Authorization: Bearer ${MISSING_TOKEN}
          health: {timeout_s: "${ALSO_MISSING}"}
        """,
    )
    shown = str(path)
    assert problems_of(path, environ={}) == [
        f"{shown}:4: field 'server.headers.Authorization': environment variable 'MISSING_TOKEN' is not set: "
        "set it, add it to .env beside the file, or write ${MISSING_TOKEN:-default}",
        f"{shown}:5: field 'server.health.timeout_s': environment variable 'ALSO_MISSING' is not set: "
        "set it, add it to .env beside the file, or write ${ALSO_MISSING:-default}",
    ]


def test_malformed_reference_is_an_error(tmp_path):
    path = write(
        tmp_path / "config.yaml", 'server:\n  command: python\n  args: ["${not a name}", "${OPEN"]\n'
    )
    assert problems_of(path, environ={}) == [
        f"{path}:3: field 'server.args[0]': malformed reference '${{not a name}}': "
        "write ${NAME} or ${NAME:-default}",
        f"{path}:3: field 'server.args[1]': unclosed '${{': "
        "write ${NAME} or ${NAME:-default}, or $${ for a literal",
    ]


# --- secrets -------------------------------------------------------------------------------------


def secret_config(tmp_path: Path, monkeypatch) -> config_module.Config:
    monkeypatch.setenv("FAKE_API_KEY", FAKE_KEY)
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          url: http://127.0.0.1:8765/mcp
          headers:
            Authorization: Bearer ${FAKE_API_KEY}
            X-Literal: literal-header-secret
          start:
            command: python
            args: [server.py, --key, "${FAKE_API_KEY}"]
            env: {API_KEY: "${FAKE_API_KEY}", PLAIN_ENV: plain-env-secret}
        """,
    )
    return load_config(path)


def test_secrets_never_reach_the_redacted_dump_or_its_hash(tmp_path, monkeypatch):
    config = secret_config(tmp_path, monkeypatch)
    # The effective config carries the real values: the server needs them.
    assert config.server.headers["Authorization"] == f"Bearer {FAKE_KEY}"
    assert config.server.start.args[-1] == FAKE_KEY

    dump = config.redacted_dump()
    hashed_bytes = orjson.dumps(dump, option=orjson.OPT_SORT_KEYS)  # exactly what config_hash hashes
    for secret in (FAKE_KEY, "literal-header-secret", "plain-env-secret"):
        assert secret.encode() not in hashed_bytes
    assert dump["server"]["headers"] == {"Authorization": "Bearer ${FAKE_API_KEY}", "X-Literal": "***"}
    assert dump["server"]["start"]["env"] == {"API_KEY": "${FAKE_API_KEY}", "PLAIN_ENV": "***"}
    assert dump["server"]["start"]["args"] == ["server.py", "--key", "${FAKE_API_KEY}"]
    assert config.config_hash == "sha256:" + __import__("hashlib").sha256(hashed_bytes).hexdigest()


def test_redactor_scrubs_text_and_json(tmp_path, monkeypatch):
    config = secret_config(tmp_path, monkeypatch)
    redactor = config.redactor
    log_line = f"401 from server: token {FAKE_KEY} rejected (header literal-header-secret)"
    assert redactor.redact(log_line) == "401 from server: token ${FAKE_API_KEY} rejected (header ***)"
    record = {"args": [FAKE_KEY], "nested": {"text": f"x{FAKE_KEY}y", "n": 3}, FAKE_KEY: "key"}
    assert redactor.redact(record) == {
        "args": ["${FAKE_API_KEY}"],
        "nested": {"text": "x${FAKE_API_KEY}y", "n": 3},
        "${FAKE_API_KEY}": "key",
    }
    assert FAKE_KEY not in json.dumps(redactor.redact(record))


def test_redactor_leaves_short_values_alone_except_whole_config_values(tmp_path, monkeypatch):
    redactor = config_module.Redactor([("80", "${PORT}"), ("info", "***"), ("long-secret", "***")])
    assert redactor.redact(["80", "info", "listening on 8080: information, long-secret"]) == [
        "80",
        "info",
        "listening on 8080: information, ***",
    ]
    monkeypatch.setenv("SHORT_PORT", "80")
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          command: python
          args: [server.py, --port, "${SHORT_PORT}"]
          env: {LOG_LEVEL: info}
        """,
    )
    config = load_config(path)
    assert config.server.args == ["server.py", "--port", "80"]
    dump = config.redacted_dump()  # the recorded config knows where values came from, whatever their length
    assert dump["server"]["args"] == ["server.py", "--port", "${SHORT_PORT}"]
    assert dump["server"]["env"] == {"LOG_LEVEL": "***"}
    assert config.redactor.redact("level info on port 80") == "level info on port 80"


def test_config_hash_ignores_key_order_and_follows_settings(tmp_path):
    # Same folder: resolved paths are part of the effective config, so the folder is part of the hash.
    first = write(tmp_path / "a.yaml", "server: {command: python, args: [s.py]}\nloop: {max_iterations: 2}\n")
    second = write(
        tmp_path / "b.yaml", "loop: {max_iterations: 2}\nserver: {args: [s.py], command: python}\n"
    )
    third = write(tmp_path / "c.yaml", "loop: {max_iterations: 4}\nserver: {args: [s.py], command: python}\n")
    hash_a, hash_b, hash_c = (load_config(path, environ={}).config_hash for path in (first, second, third))
    assert hash_a == hash_b != hash_c
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", hash_a)


# --- provider strings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "provider", "model", "pydantic_ai_name", "canonical"),
    [
        ("openai/gpt-4o", "openai", "gpt-4o", "openai:gpt-4o", "openai/gpt-4o"),
        (
            "anthropic/claude-sonnet-4-6",
            "anthropic",
            "claude-sonnet-4-6",
            "anthropic:claude-sonnet-4-6",
            None,
        ),
        (
            "anthropic:claude-sonnet-4-6",
            "anthropic",
            "claude-sonnet-4-6",
            "anthropic:claude-sonnet-4-6",
            "anthropic/claude-sonnet-4-6",
        ),
        ("minimax/m2.5", "minimax", "m2.5", "minimax:m2.5", None),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b", "ollama:llama3.1:8b", "ollama/llama3.1:8b"),
        (
            "openrouter/meta-llama/llama-3.3-70b",
            "openrouter",
            "meta-llama/llama-3.3-70b",
            "openrouter:meta-llama/llama-3.3-70b",
            None,
        ),
        ("demo", "demo", None, "demo", None),
    ],
)
def test_provider_strings_parse(text, provider, model, pydantic_ai_name, canonical):
    spec = parse_provider(text)
    assert (spec.provider, spec.model, spec.pydantic_ai_name, str(spec)) == (
        provider,
        model,
        pydantic_ai_name,
        canonical or text,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt4o", "'gpt4o' names no provider: write"),
        ("openai/", "'openai/' is not a provider string: write"),
        ("/gpt-4o", "'/gpt-4o' is not a provider string: write"),
        ("open ai/x", "'open ai/x' is not a provider string: write"),
        ("openai/gpt 4o", "'openai/gpt 4o' is not a provider string: write"),
        ("acme/model-1", "unknown provider 'acme' in 'acme/model-1': use one of "),
        ("demo/x", "'demo/x': `demo` takes no model part, write just `demo`"),
    ],
)
def test_bad_provider_strings_say_what_is_accepted(text, message):
    with pytest.raises(ValueError) as info:
        parse_provider(text)
    assert str(info.value).startswith(message)
    if "unknown provider" in message:
        assert (
            "anthropic, " in str(info.value)
            and "minimax" in str(info.value)
            and "providers.endpoints" in str(info.value)
        )
    else:
        assert "`provider/model` (e.g. openai/gpt-4o)" in str(info.value) or "demo" in str(info.value)


def test_configured_endpoints_are_providers(tmp_path):
    path = write(
        tmp_path / "config.yaml",
        """
        server: {command: python}
        providers:
          phase1: local-llm/llama3.1:8b
          phase2: minimax/m2.5
          endpoints:
            local-llm: {base_url: "http://127.0.0.1:11434/v1"}
        """,
    )
    providers = load_config(path, environ={}).providers
    assert str(providers.phase1) == "local-llm/llama3.1:8b"
    assert providers.endpoint_for(providers.phase1).base_url == "http://127.0.0.1:11434/v1"
    minimax = providers.endpoint_for(providers.phase2)
    assert (minimax.base_url, minimax.api_key_env) == ("https://api.minimax.io/v1", "MINIMAX_API_KEY")
    assert providers.endpoint_for(parse_provider("openai/gpt-4o")) is None


def test_provider_list_matches_installed_pydantic_ai():
    import inspect

    from pydantic_ai.providers import infer_provider_class

    # Reading the names off pydantic-ai's own dispatch is instant; importing every provider's SDK is not.
    known = set(re.findall(r"case ([^:]+):", inspect.getsource(infer_provider_class)))
    labels = {name for case in known for name in re.findall(r"'([^']+)'", case)}
    assert set(PYDANTIC_AI_PROVIDERS) <= labels, set(PYDANTIC_AI_PROVIDERS) - labels
    assert infer_provider_class("openai").__name__ == "OpenAIProvider"
    with pytest.raises(ValueError):
        infer_provider_class("acme")


def test_cli_provider_override_wins_and_errors_name_the_flag(tmp_path):
    path = write(tmp_path / "config.yaml", MINIMAL + "providers: {phase1: openai/gpt-4o}\n")
    config = load_config(
        path, ConfigOverrides(providers={"phase1": "anthropic:claude-sonnet-4-6"}), environ={}
    )
    assert str(config.providers.phase1) == "anthropic/claude-sonnet-4-6"
    assert config.redacted_dump()["providers"]["phase1"] == "anthropic/claude-sonnet-4-6"
    problems = problems_of(path, overrides=ConfigOverrides(providers={"phase2": "gpt4o"}), environ={})
    assert len(problems) == 1 and problems[0].startswith("--phase2-provider: 'gpt4o' names no provider")


def test_tasks_override_is_relative_to_the_current_folder(tmp_path, monkeypatch):
    path = write(tmp_path / "conf" / "config.yaml", MINIMAL)
    monkeypatch.chdir(tmp_path)
    config = load_config(path, ConfigOverrides(tasks=Path("other/tasks.yaml")), environ={})
    assert config.paths.tasks == tmp_path / "other" / "tasks.yaml"


# --- error lines ---------------------------------------------------------------------------------


def test_every_problem_is_reported_with_its_line(tmp_path):
    path = write(
        tmp_path / "config.yaml",
        """
        server:
          name: demo-server
          command: python
          health:
            timeout_s: 0
            retries: 2
        providers:
          phase1: gpt4o
        thresholds:
          overlap: 1.5
        timeouts:
          task_s: soon
        loop:
          max_iterations: 0
        """,
    )
    assert problems_of(path, environ={}) == [
        f"{path}:5: field 'server.health.timeout_s': must be greater than 0",
        f"{path}:6: field 'server.health.retries': unknown field (known: timeout_s, min_tools)",
        f"{path}:8: field 'providers.phase1': 'gpt4o' names no provider: write `provider/model` "
        "(e.g. openai/gpt-4o), pydantic-ai's `provider:model` (e.g. anthropic:claude-sonnet-4-6), or `demo`",
        f"{path}:10: field 'thresholds.overlap': must be at most 1",
        f"{path}:12: field 'timeouts.task_s': must be a number",
        f"{path}:14: field 'loop.max_iterations': must be at least 1",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("server: [unclosed\n", ":2:1: YAML syntax error: expected ',' or ']', but got '<stream end>'"),
        ("", ": config file is empty: expected a mapping of fields"),
        ("# only a comment\n", ": config file is empty: expected a mapping of fields"),
        ("- server\n", ":1: the top level must be a mapping of fields, not a list"),
        (
            "server: {command: a}\nserver: {command: b}\n",
            ":2: duplicate key 'server' (first given at line 1)",
        ),
        (
            "server:\n  command: a\n  command: b\n",
            ":3: duplicate key 'server.command' (first given at line 2)",
        ),
        (
            "loop: {}\n",
            ":1: field 'server': is required: describe the server under test (`command` or `url`), "
            "or pass --command, --url or --from-mcp-json",
        ),
        (
            "server: {command: a, url: 'http://x/mcp'}\n",
            ":1: field 'server': give either `command` (stdio) or `url` (streamable HTTP), not both",
        ),
        ("server: {url: 'ftp://x'}\n", ":1: field 'server.url': must start with http:// or https://"),
        (
            "server: {command: a}\nprovider: {}\n",
            ":2: field 'provider': unknown field (known: server, providers, "
            "thresholds, timeouts, paths, loop, review, kpi, fix, check)",
        ),
        ("server: {command: a, args: run}\n", ":1: field 'server.args': must be a list"),
    ],
)
def test_file_level_problems(tmp_path, text, expected):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    assert problems_of(path, environ={}) == [f"{path}{expected}"]


def test_missing_file(tmp_path):
    assert problems_of(tmp_path / "nope.yaml", environ={}) == [
        f"{tmp_path / 'nope.yaml'}: config file not found"
    ]


def test_missing_file_allowed_when_flags_describe_the_server(tmp_path):
    flags = ServerFlags(command="python server.py")
    config = load_config(tmp_path / "config.yaml", ConfigOverrides(server=flags), environ={}, missing_ok=True)
    assert (config.server.command, config.server.args, config.source) == ("python", ["server.py"], None)
    assert config.paths.tasks == tmp_path / "tasks.yaml"


# --- server-selection flags ----------------------------------------------------------------------


def configured_server(tmp_path: Path) -> ServerConfig:
    return ServerConfig(
        name="mine",
        url="http://127.0.0.1:1/mcp",
        headers={"A": "b"},
        repo=str(tmp_path / "repo"),
        health={"timeout_s": 5, "min_tools": 2},
    )


def test_command_flag_names_another_server_keeping_only_health(tmp_path):
    server = resolve_server(
        configured_server(tmp_path), command="python 'my server.py' --fast", base_dir=tmp_path
    )
    assert (server.command, server.args, server.url, server.headers) == (
        "python",
        ["my server.py", "--fast"],
        None,
        {},
    )
    # a one-off server is named after what it runs and never inherits the configured repository
    assert (server.name, server.repo, server.repo_template) == ("my server", None, None)
    assert server.health.min_tools == 2


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python tests/servers/tiny_server.py --x", "tiny_server"),
        ("npx -y @modelcontextprotocol/server-filesystem /tmp", "server-filesystem"),
        ("/usr/local/bin/my-mcp --stdio", "my-mcp"),
        ("python3.11 -m pkg.server", "pkg.server"),
        ("uvx mcp-server-git@1.2", "mcp-server-git"),
    ],
)
def test_a_command_server_is_named_after_what_it_runs(tmp_path, command, name):
    assert resolve_server(None, command=command, base_dir=tmp_path).name == name


def test_url_flag_with_headers(tmp_path):
    config_server = ServerConfig(command="python", args=["s.py"], cwd="srv", env={"K": "v"})
    server = resolve_server(
        config_server,
        url="http://127.0.0.1:9/mcp",
        headers=("Authorization: Bearer x:y", "X-A:1"),
        base_dir=tmp_path,
    )
    assert (server.command, server.url, server.cwd, server.env) == (None, "http://127.0.0.1:9/mcp", None, {})
    assert server.headers == {"Authorization": "Bearer x:y", "X-A": "1"}
    assert server.name == "127.0.0.1:9"


def test_no_flags_keep_the_config_server(tmp_path):
    config_server = ServerConfig(command="python", cwd="srv")
    assert resolve_server(config_server, base_dir=tmp_path).cwd == str(tmp_path / "srv")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": "a", "url": "http://x/mcp"}, "--command and --url are mutually exclusive"),
        ({"url": "http://x/mcp", "mcp_json": "m.json"}, "--url and --from-mcp-json are mutually exclusive"),
        ({"command": "a", "headers": ("A:b",)}, "--header applies to --url only"),
        ({"url": "http://x/mcp", "headers": ("no-colon",)}, "--header must be NAME:VALUE"),
        ({"server_name": "x"}, "--server names an entry of --from-mcp-json"),
        ({"command": "  "}, "--command is empty"),
        ({"command": "python 'unclosed"}, "--command cannot be split into words"),
        ({"url": "localhost:8765"}, "--url: must start with http:// or https://"),
        ({}, "no server to talk to: add a `server:` section to config.yaml, or pass --command, --url or"),
    ],
)
def test_flag_errors(tmp_path, kwargs, message):
    with pytest.raises(UserError) as info:
        resolve_server(None, base_dir=tmp_path, **kwargs)
    assert info.value.message.startswith(message)


def mcp_json(tmp_path: Path, servers: dict, key: str = "mcpServers") -> Path:
    path = tmp_path / "clients" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: servers}), encoding="utf-8")
    return path


def test_mcp_json_stdio_and_http_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("GH_TOKEN_FOR_TEST", "ghp-123")
    path = mcp_json(
        tmp_path,
        {
            "github": {
                "command": "npx",
                "args": ["-y", "gh-mcp"],
                "env": {"TOKEN": "${GH_TOKEN_FOR_TEST}"},
                "cwd": "work",
                "disabled": False,
            },
            "remote": {"type": "http", "serverUrl": "https://mcp.example.com/mcp", "headers": {"X-Key": "k"}},
        },
    )
    github = resolve_server(
        configured_server(tmp_path), mcp_json=path, server_name="github", base_dir=tmp_path
    )
    assert (github.name, github.command, github.args) == ("github", "npx", ["-y", "gh-mcp"])
    assert github.env == {"TOKEN": "ghp-123"}
    assert github.cwd == str(tmp_path / "clients" / "work")  # relative to the mcp.json's folder
    assert github.repo is None  # not the configured server's repository
    assert github.health.min_tools == 2  # kept from config.yaml
    remote = resolve_server(None, mcp_json=path, server_name="remote", base_dir=tmp_path)
    assert (remote.url, remote.headers, remote.command) == (
        "https://mcp.example.com/mcp",
        {"X-Key": "k"},
        None,
    )


def test_mcp_json_single_server_needs_no_name(tmp_path):
    path = mcp_json(tmp_path, {"only": {"command": "node", "args": ["s.js"]}}, key="servers")
    assert resolve_server(None, mcp_json=path, base_dir=tmp_path).name == "only"


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (None, "x", ": mcp.json file not found (given by --from-mcp-json)"),
        ('{"mcpServers": {', "x", ":1:17: invalid JSON: Expecting property name enclosed in double quotes"),
        (
            '{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}',
            "zz",
            ": no server 'zz' (servers: a, b)",
        ),
        (
            '{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}',
            None,
            ": defines several servers: choose one with --server NAME (servers: a, b)",
        ),
        ('{"other": 1}', "x", ': no servers: expected {"mcpServers":'),
        (
            '{"mcpServers": {"a": {"url": "http://h/sse", "type": "sse"}}}',
            "a",
            ": server 'a' uses the SSE transport; MCPipeChekr speaks stdio and streamable HTTP",
        ),
        ('{"mcpServers": {"a": {"args": []}}}', "a", ": server 'a' has neither `command` (stdio) nor `url`"),
        (
            '{"mcpServers": {"a": {"command": "x", "env": {"K": "${UNSET_FOR_TEST_ONLY}"}}}}',
            "a",
            ": server 'a' field 'env.K': environment variable 'UNSET_FOR_TEST_ONLY' is not set",
        ),
    ],
)
def test_mcp_json_errors_name_the_file(tmp_path, monkeypatch, content, name, message):
    monkeypatch.delenv("UNSET_FOR_TEST_ONLY", raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigFileError) as info:
        resolve_server(None, mcp_json=path, server_name=name, base_dir=tmp_path)
    assert str(info.value).startswith("mcp.json" + message)


def test_flags_through_load_config_still_report_file_mistakes(tmp_path):
    path = write(tmp_path / "config.yaml", "server:\n  name: keep-me\n  command: python\n  bogus: 1\n")
    assert problems_of(
        path, overrides=ConfigOverrides(server=ServerFlags(url="http://127.0.0.1:1/mcp")), environ={}
    ) == [
        f"{path}:4: field 'server.bogus': unknown field "
        "(known: name, command, args, env, cwd, url, headers, start, "
        "repo, repo_template, health)"
    ]
    path.write_text("server:\n  name: keep-me\n  command: python\n", encoding="utf-8")
    config = load_config(path, ConfigOverrides(server=ServerFlags(url="http://127.0.0.1:1/mcp")), environ={})
    assert (config.server.name, config.server.url, config.server.command) == (
        "127.0.0.1:1",
        "http://127.0.0.1:1/mcp",
        None,
    )


# --- the documentation matches the models ----------------------------------------------------------


def test_every_field_is_documented():
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    models = [
        config_module.Config,
        config_module.ServerConfig,
        config_module.LaunchSpec,
        config_module.HealthConfig,
        config_module.ProvidersConfig,
        providers_module.EndpointConfig,
        config_module.ThresholdsConfig,
        config_module.TimeoutsConfig,
        config_module.PathsConfig,
        config_module.LoopConfig,
        config_module.KpiConfig,
        config_module.FixConfig,
        config_module.CheckConfig,
        tasks_module.TaskFile,
        tasks_module.Task,
        tasks_module.ReferenceCall,
        tasks_module.SelectionCase,
    ]
    missing = [
        f"{model.__name__}.{name}"
        for model in models
        for name in model.model_fields
        if f"`{name}`" not in doc
    ]
    assert missing == []
    for name, model in (
        ("thresholds", config_module.ThresholdsConfig),
        ("timeouts", config_module.TimeoutsConfig),
    ):
        for field_name, info in model.model_fields.items():
            default = f"{info.default:g}"
            kind = "integer >= 1" if info.annotation is int else "number"
            assert f"| `{field_name}` | {kind} | {default} |" in doc, f"{name}.{field_name} default {default}"
    for flag in (
        "--command",
        "--url",
        "--header",
        "--from-mcp-json",
        "--server",
        "--config",
        "--tasks",
        "--offline",
    ):
        assert f"`{flag}" in doc
    for provider in PYDANTIC_AI_PROVIDERS:
        assert f"`{provider}`" in doc
