"""`check` never writes a secret of the environment that a server echoes back.

The server under test inherits the process environment; a tool that shows it
(tests/servers/settings_echo_server.py) hands every value to argument synthesis,
which may feed one into another tool and record it as that call's arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.cli import main
from mcpipechekr.config import secret_name

SERVER = Path(__file__).resolve().parent / "servers" / "settings_echo_server.py"
SECRET = "vlt-7Q2x9Jk4mN8pR3sT"


def test_an_echoed_environment_secret_is_masked_in_the_check_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_ACCESS_TOKEN", SECRET)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {"server": {"name": "settings-echo", "command": sys.executable, "args": [str(SERVER)]}}
        ),
        encoding="utf-8",
    )
    output = tmp_path / "check_report.json"
    result = CliRunner().invoke(
        main,
        ["check", "--config", str(config), "--layer", "protocol"]
        + ["--format", "json", "--output", str(output)],
        catch_exceptions=False,
    )
    written = output.read_text(encoding="utf-8")
    checks = {check.id: check for check in CheckReport.model_validate_json(written).checks}
    # the secret did reach the check: synthesis fed it into connect, which accepted it
    assert checks["PC-10:connect"].status == "PASS", checks["PC-10:connect"]
    assert "${VAULT_ACCESS_TOKEN}" in written, written[:2000]
    assert SECRET not in written
    assert SECRET not in result.output


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("API_KEY", True),
        ("OPENAI_APIKEY", True),
        ("PGPASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("MCP_AUTH", True),
        ("KEYBOARD_LAYOUT", False),
        ("HOCKEY_TEAM", False),
        ("PATH", False),
        ("TZ", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert secret_name(name) is secret
