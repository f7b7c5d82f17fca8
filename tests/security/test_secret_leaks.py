"""Secrets out of every file and message; server logs private and impossible to redirect.

The project (secret_project.py) hands its server secrets of every kind, and
the server prints each of them, raw and escaped, to stderr at start and in its
one tool's answer. `check`, `baseline`, a Phase 1 `run` on the demo provider,
`server health` and `validate` run in it as a user runs them; then no form of
any secret may be found in any file they left (the run folder, the project's
`.mcpipechekr/`, the findings home, the temp folder) nor in what they printed.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from secret_project import SERVER_NAME, SecretProject, leaks_in_text, leaks_under, secret_project

from mcpipechekr._util.private_log import RedactingLog
from mcpipechekr._util.redact import Redactor

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("security.test_secret_leaks")]


@dataclass(frozen=True)
class Ran:
    """The project after the commands, and what each printed."""

    project: SecretProject
    outputs: dict[str, subprocess.CompletedProcess[str]]


COMMANDS = {
    "check": ("check",),
    "baseline": ("baseline",),
    "run": ("run",),
    "server health": ("server", "health"),
    "validate": ("validate",),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    project = secret_project(tmp_path_factory.mktemp("secrets"))
    outputs = {}
    for name, args in COMMANDS.items():
        result = project.mcpipechekr(*args)
        assert result.returncode == 0, (name, result.stdout[-2000:], result.stderr[-2000:])
        outputs[name] = result
    return Ran(project, outputs)


def test_the_server_stderr_logs_hold_no_secret(ran: Ran) -> None:
    logs = ran.project.logs()
    home_logs = ran.project.root / ".mcpipechekr" / "logs"
    assert home_logs / f"{SERVER_NAME}.stderr.log" in logs  # check's
    assert home_logs / "baseline.stderr.log" in logs
    assert [path for path in logs if path.parent.parent.name == "runs"]  # the run's, from the capture proxy
    for path in logs:
        text = path.read_text()
        assert "leaky: argv" in text, path  # the server did print its secrets there
        assert not leaks_in_text(text), (path, leaks_in_text(text))


def test_traces_journals_and_the_baseline_hold_no_json_escaped_secret(ran: Ran) -> None:
    runs = ran.project.root / "runs"
    written = [*runs.rglob("traces/*.json"), *runs.rglob("journals/*.jsonl"), runs / "baseline.json"]
    assert len(written) == 3 and all(path.exists() for path in written)
    for path in written:
        text = path.read_text()
        assert "LEAKY_QUOTED" in text, path  # the tool's JSON answer, its quoted secret inside, is there
        assert not leaks_in_text(text), (path, leaks_in_text(text))


def test_no_file_anywhere_holds_a_secret_in_any_form(ran: Ran) -> None:
    assert leaks_under(ran.project) == {}


def test_no_command_prints_a_secret(ran: Ran) -> None:
    printed = {
        name: leaks_in_text(result.stdout + result.stderr)
        for name, result in ran.outputs.items()
        if leaks_in_text(result.stdout + result.stderr)
    }
    assert printed == {}


def test_no_log_is_left_in_the_temp_folder(ran: Ran) -> None:
    assert sorted(str(path) for path in ran.project.tmpdir.rglob("*")) == []


def test_server_logs_are_readable_by_their_owner_only(ran: Ran) -> None:
    modes = {str(path): oct(stat.S_IMODE(path.stat().st_mode)) for path in ran.project.logs()}
    assert modes and set(modes.values()) == {"0o600"}, modes


def test_a_secret_is_redacted_in_its_escaped_forms() -> None:
    secret = 'pa"ss\\word/&? 9'
    redactor = Redactor([(secret, "${PASSWORD}")])
    text = (
        'raw pa"ss\\word/&? 9, json pa\\"ss\\\\word/&? 9, url pa%22ss%5Cword%2F%26%3F%209, '
        "form pa%22ss%5Cword%2F%26%3F+9, shell 'pa\"ss\\word/&? 9'"
    )
    assert redactor.redact(text) == (
        "raw ${PASSWORD}, json ${PASSWORD}, url ${PASSWORD}, form ${PASSWORD}, shell ${PASSWORD}"
    )


def test_a_halt_message_does_not_show_the_secrets_the_server_printed(tmp_path: Path) -> None:
    project = secret_project(tmp_path, exit_at_start=True)
    result = project.mcpipechekr("check")
    printed = result.stdout + result.stderr
    assert result.returncode == 2 and "exited with code 3" in printed, printed
    assert "leaky: argv" in printed  # the message quotes the server's stderr ...
    assert leaks_in_text(printed) == []  # ... with every secret replaced
    assert leaks_under(project) == {}


def test_a_symlink_planted_at_a_log_path_is_not_followed(tmp_path: Path) -> None:
    project = secret_project(tmp_path)
    target = tmp_path / "outside" / "authorized_keys"
    target.parent.mkdir()
    target.write_text("ssh-ed25519 AAAA planted\n")
    logs = project.root / ".mcpipechekr" / "logs"
    logs.mkdir(parents=True)
    for name in (f"{SERVER_NAME}.stderr.log", "baseline.stderr.log"):
        (logs / name).symlink_to(target)
    outputs = [project.mcpipechekr("check"), project.mcpipechekr("baseline")]
    assert target.read_text() == "ssh-ed25519 AAAA planted\n"
    for result in outputs:
        assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
        assert "is a symbolic link: refusing to write a log through it" in result.stderr, result.stderr


def test_a_secret_written_in_pieces_is_still_redacted(tmp_path: Path) -> None:
    """A server that flushes half a secret, waits, then writes the rest: the log never holds either half
    next to the other, because a line is redacted only once it is whole."""
    secret = "halfandhalf-5e2b9c"
    script = (
        "import sys, time\n"
        f"sys.stderr.write('token={secret[:8]}'); sys.stderr.flush(); time.sleep(0.3)\n"
        f"sys.stderr.write('{secret[8:]} end\\n'); sys.stderr.flush()\n"
    )
    log = tmp_path / "server.stderr.log"
    with RedactingLog(log, Redactor([(secret, "${HALF}")])) as sink:
        subprocess.run([sys.executable, "-c", script], stderr=sink.fileno(), check=True)
    assert log.read_text() == "token=${HALF} end\n"
