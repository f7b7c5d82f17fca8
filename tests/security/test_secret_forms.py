"""A secret reaches files in other forms than itself: as base64, as a literal on the server's command
line, in a URL, and typed by a person into a review annotation. Each is scrubbed.

The redactor is the one every writer uses (`Config.redactor`), so what is checked here is what the
stderr logs, journals, traces, reports and manifests get.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from test_review import RUN_ID, project, run_dir  # noqa: F401  (fixtures)

from mcpipechekr._util.redact import Redactor, base64_forms, command_line_secrets, url_secrets
from mcpipechekr.artifacts import RunDir
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.runplan import server_ref

SECRET = "s3cret-Value-42"


@pytest.mark.parametrize("offset", ["", "a", "ab", "user:", "api-key="])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_the_base64_of_a_secret_is_redacted_at_any_offset_and_alphabet(offset: str, encode) -> None:
    redactor = Redactor([(SECRET, "${DB_PASSWORD}")])
    encoded = encode((offset + SECRET + "!").encode()).decode()
    for text in (encoded, encoded.rstrip("="), f"Authorization: Basic {encoded}"):
        scrubbed = redactor.redact(text)
        assert "${DB_PASSWORD}" in scrubbed, (offset, text)
        decoded = base64.b64decode(text.rsplit(" ", 1)[-1].replace("-", "+").replace("_", "/") + "==")
        assert SECRET.encode() in decoded  # the text did hold it, and the scrubbed one does not
        assert scrubbed != text


def test_base64_forms_are_long_enough_to_mean_something_and_plain_text_is_left_alone() -> None:
    assert all(len(form.rstrip("=")) >= 8 for form in base64_forms("abcdef"))
    redactor = Redactor([(SECRET, "***")])
    prose = "The quick brown fox jumps over the lazy dog; c2VjcmV0 is base64 of another word."
    assert redactor.redact(prose) == prose


@pytest.mark.parametrize(
    ("argv", "found"),
    [
        (["server", "--password", "pw-123456"], ["pw-123456"]),
        (["server", "--api-key=key-987654", "--db-token", "tok-55555"], ["key-987654", "tok-55555"]),
        (["env", "DB_PASSWORD=hunter2hunter", "server"], ["hunter2hunter"]),
        (["mysql", "-uroot", "-pS3cretPass", "db"], ["S3cretPass"]),
        (["server", "--dsn", "postgres://app:dsn-pass-1@db:5432/x?sslmode=require"], ["dsn-pass-1"]),
        (["server", "https://api.example.com/v1?key=QueryKey123&page=2"], ["QueryKey123"]),
        (["psql", "-p", "5432", "--host", "db"], []),  # psql's -p is the port
        (["server", "--no-password", "notes.db"], []),  # a switch, then a file
        (["server", "--bypass", "cache-folder"], []),  # a word ending in "pass" is no password flag
    ],
)
def test_values_a_command_line_carries_as_secrets(argv: list[str], found: list[str]) -> None:
    assert command_line_secrets(argv) == found


def test_a_url_password_and_key_parameter_are_secrets() -> None:
    assert url_secrets("https://bot:tok-1234567@mcp.example.com/mcp?api_key=abc-7654321") == [
        "tok-1234567",
        "abc-7654321",
    ]
    assert url_secrets("https://mcp.example.com/mcp?page=2") == []


def test_a_literal_password_on_the_servers_command_line_is_in_no_manifest_or_log(tmp_path: Path) -> None:
    config_path = tmp_path / "config.yaml"
    args = [
        "server.py",
        "--password",
        "Lit3ralPass",
        "--dsn",
        "postgres://app:dsnSecret99@db/x?key=QueryKey123",
    ]
    config_path.write_text(yaml.safe_dump({"server": {"name": "db", "command": "python", "args": args}}))
    config = load_config(config_path, environ={})
    recorded = json.dumps([server_ref(config).model_dump(mode="json"), config.redacted_dump()])
    for secret in ("Lit3ralPass", "dsnSecret99", "QueryKey123"):
        assert secret not in recorded
        echoed = f"server started with {secret} ({base64.b64encode(secret.encode()).decode()})"
        assert secret not in config.redactor.redact(echoed)
        assert base64.b64encode(secret.encode()).decode() not in config.redactor.redact(echoed)
    assert "--password *** --dsn 'postgres://app:***@db/x?key=***'" in server_ref(config).command


def test_a_key_typed_into_a_review_annotation_is_not_stored(
    project: Path,  # noqa: F811
    run_dir: RunDir,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "sk-test-abcdef0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    result = CliRunner().invoke(
        main,
        [
            "review",
            RUN_ID,
            "--exit",
            "--annotate",
            f"use my key {key} for the fix",
            "--config",
            str(project / "config.yaml"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    stored = run_dir.review.read_text()
    assert key not in stored and "use my key ${OPENAI_API_KEY} for the fix" in stored
