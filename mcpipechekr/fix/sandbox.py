"""The fix agent's sandbox: it writes only inside the repository, pushes nowhere, and nothing it starts
outlives its run, whatever agent it is.

Why the operating system and not the agent: the agent CLIs' own settings
(opencode's `external_directory`, Claude Code's print mode) and git's
environment (`guards.AGENT_GIT_ENV`) only bind the agent while it asks them.
Its own shell tool does not: `python3 -c "open('/tmp/x', 'w')"` or
`sh -c '... > $(printf /tmp/x)'` wrote outside the repository, `env -u
GIT_ALLOW_PROTOCOL git push /path/to/bare.git` pushed, and a `setsid nohup`
process survived the run (reparented to PID 1) and edited the repository after
the loop had restored it. `agent: shell` and aider had no confinement at all.

So every fix agent but the bundled `demo` fixer (trusted code that applies a
maintainer's patch; see docs/fix.md) runs under bubblewrap (`bwrap`):

- the whole file system read-only (`--ro-bind / /`): the agent reads the
  tools, the interpreters and the project as they are, and writes nowhere;
- writable: the repository's work tree, its git directory (and a linked
  worktree's common one), a private folder for this run only, holding its
  `HOME`, `XDG_*` folders and `TMPDIR` (the agent's config and caches, the
  files it copies in from the real home: `AgentTemplate.home_files`), and the
  findings home when the findings server is in the agent's MCP configuration
  (`serve` records its verifications there);
- credentials out of reach: `~/.ssh`, `~/.gnupg`, `~/.git-credentials`,
  `~/.config/gh`, `~/.netrc`, the cloud CLIs' folders, ... of the real home
  are covered by an empty folder (or `/dev/null`), and so are the ssh agent's
  socket, `/run/user/<uid>` (the keyring, gpg-agent, D-Bus) and the container
  daemons' sockets; `SSH_AUTH_SOCK`, `GH_TOKEN`, `GITHUB_TOKEN`, `GIT_ASKPASS`
  and every other `*_TOKEN` the agent's provider does not need are left out
  of its environment (`CREDENTIAL_ENV`);
- a git remote on this machine is a path, so it is read-only like the rest:
  a push to it fails whatever the agent does to its environment;
- its own PID namespace (`--unshare-pid`), with `--die-with-parent`: when the
  agent's command exits, is stopped at the timeout, or the loop is
  interrupted or killed, the kernel ends every process it started, a
  `setsid nohup` one included. The loop waits for the namespace to be gone
  (`bwrap --info-fd` names its first process) before it looks at the work
  tree, so nothing edits the repository after it is restored;
- the network is shared: the agent must reach its model's endpoint, and the
  server under test when it is served over HTTP.

Inside the sandbox a small reaper (`_REAPER`) runs the agent and, when it
exits, names on stderr every process still running before the namespace
takes them with it; the loop reports those lines and the file system's
refusals it sees in the agent's output (`refusals`).

Why bubblewrap and not another mechanism: it is one small unprivileged binary
packaged by every distribution (`apt-get install bubblewrap`), used by
Flatpak and by Codex CLI on Linux; it confines any program as it is installed
on the host (no image to build, the user's toolchain and agent CLIs usable
unchanged); and it gives a PID namespace, which is what makes "nothing
outlives the run" hold. Landlock confines writes but ends no process and
hides no file from reads; a container runtime needs a daemon or an image with
the agent inside; a throwaway user account needs root and ends nothing.

Limits: the agent can read every file not masked here (the project, other
folders of the user); the network is open, so what it read it can send, and
a remote reached over the network is refused only for want of credentials;
abstract Unix sockets (in the network namespace) stay reachable. Linux only:
where bwrap cannot make a user namespace (no bwrap, `kernel.
unprivileged_userns_clone=0`, AppArmor's restriction on Ubuntu 24.04) the fix
refuses to start, saying how to install or allow it, unless `fix.sandbox:
off` (recorded in the manifest's config and in fix.json, and printed at
every fix).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr._util.tempfiles import own_temp_folder
from mcpipechekr.errors import UserError

BWRAP_ENV = "MCPIPECHEKR_BWRAP"
"""Names the bwrap binary to use (tests point it at a missing one); else `bwrap` on PATH."""

INSTALL_HINT = "sudo apt-get install bubblewrap"

SANDBOX_MARK = "mcpipechekr-sandbox:"
"""Starts each line the reaper writes on the agent's stderr."""

CREDENTIAL_PATHS = (
    ".ssh",
    ".gnupg",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".netrc",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".password-store",
)
"""Paths under the real home (`$HOME` and the account's home) that the agent finds empty."""

SYSTEM_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman",
    "/run/containerd",
    "/run/dbus",
)
"""Daemons whose socket is a key to the machine: covered inside the sandbox."""

CREDENTIAL_ENV = frozenset(
    {
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "SSH_ASKPASS",
        "GIT_ASKPASS",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "GPG_AGENT_INFO",
        "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "DOCKER_HOST",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GITLAB_TOKEN",
        "GL_TOKEN",
        "NPM_TOKEN",
        "NODE_AUTH_TOKEN",
        "TWINE_PASSWORD",
        "CARGO_REGISTRY_TOKEN",
    }
)
"""Environment variables never handed to a sandboxed agent (nor `GIT_CONFIG_KEY_n`/`_VALUE_n`, nor any
other `*_TOKEN` its provider does not need)."""

_DROPPED_PATTERN = re.compile(r"^GIT_CONFIG_(KEY|VALUE)_\d+$|_TOKEN$")

_REFUSED = re.compile(r"read-only file system|transport '[^']+' not allowed", re.IGNORECASE)
"""What the agent's output says when the sandbox (or git's disabled transports) refused something."""

_REAPER = f"""
import os, signal, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
for number in (signal.SIGINT, signal.SIGTERM):
    signal.signal(number, lambda signum, frame: child.send_signal(signum))
code = child.wait()
for entry in sorted(os.listdir("/proc"), key=lambda name: int(name) if name.isdigit() else 0):
    if not entry.isdigit() or int(entry) in (1, os.getpid()):
        continue
    try:
        with open(f"/proc/{{entry}}/cmdline", "rb") as handle:
            line = handle.read().replace(b"\\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        continue
    if line:
        print("{SANDBOX_MARK} still running when the agent exited, ended with the sandbox:", line[:300],
              file=sys.stderr, flush=True)
sys.exit(code if code >= 0 else 128 - code)
"""
"""Runs inside the sandbox as the agent's parent: forwards Ctrl-C and SIGTERM, names what outlived it."""

NAMESPACE_GONE_S = 10.0
"""How long the loop waits for a stopped sandbox's namespace to be gone before it kills its first process."""


class SandboxUnavailable(UserError):
    """bubblewrap is missing or cannot make its namespaces here; the message says how to fix it."""


def bwrap_path() -> str | None:
    """The bwrap binary: `$MCPIPECHEKR_BWRAP` (which must exist), else `bwrap` on PATH; None when neither."""
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def require_sandbox() -> str:
    """A bwrap that works on this machine (tried once per binary), or SandboxUnavailable saying why."""
    binary = bwrap_path()
    if binary is None:
        where = (
            f"${BWRAP_ENV} is {os.environ[BWRAP_ENV]!r}, not an executable file"
            if os.environ.get(BWRAP_ENV)
            else "`bwrap` is not on PATH"
        )
        raise SandboxUnavailable(
            f"the fix agent runs in a bubblewrap sandbox, and {where}. Install it (`{INSTALL_HINT}`; "
            "Fedora: `sudo dnf install bubblewrap`), or set fix.sandbox: off in config.yaml to let the "
            "agent run with your rights, unconfined."
        )
    problem = _probe(binary)
    if problem is not None:
        raise SandboxUnavailable(
            f"the fix agent runs in a bubblewrap sandbox, and {binary} cannot make one here: {problem}. "
            "It needs unprivileged user namespaces: `sudo sysctl kernel.unprivileged_userns_clone=1`, and on "
            "Ubuntu 24.04 `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor "
            "profile for bwrap); in a container, one started with user namespaces allowed. Or set "
            "fix.sandbox: off in config.yaml to let the agent run with your rights, unconfined."
        )
    return binary


@functools.cache
def _probe(binary: str) -> str | None:
    """None when `binary` makes the sandbox the agent gets; else its error, on one line."""
    try:
        tried = subprocess.run(
            [binary, *_BASE_ARGS, "--", "/bin/sh", "-c", "exit 0"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if tried.returncode == 0:
        return None
    said = " ".join(line.strip() for line in tried.stderr.splitlines() if line.strip())
    return said[:300] or f"exit code {tried.returncode}"


_BASE_ARGS = (
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/dev/shm",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
)


@dataclass(frozen=True)
class AgentSandbox:
    """How to confine one fix agent: the bwrap binary, and what it may write besides its private folder."""

    bwrap: str
    writable: tuple[Path, ...]
    """The repository's work tree and git folders, the findings home: bound writable at their own paths."""
    home_files: tuple[str, ...] = ()
    """Paths relative to the real home copied into the private one before each run (the CLI's login)."""
    keep_env: frozenset[str] = frozenset()
    """Variables the agent needs although they look like credentials (its provider's key)."""

    @contextlib.contextmanager
    def enter(self, argv: list[str], env: dict[str, str], cwd: Path) -> Iterator[SandboxRun]:
        """The argv and environment that run `argv` confined, and the pipe that names its namespace.

        The private folder is made before and removed after, once every process of the sandbox is gone.
        """
        private = own_temp_folder("agent")
        read_end, write_end = os.pipe()
        try:
            home = private / "home"
            tmp = private / "tmp"
            for folder in (home, tmp, home / ".config", home / ".local/share", home / ".cache"):
                folder.mkdir(parents=True, exist_ok=True)
            _copy_home_files(self.home_files, home)
            inner = {key: value for key, value in env.items() if not self._dropped(key)}
            inner.update(
                HOME=str(home),
                TMPDIR=str(tmp),
                XDG_CONFIG_HOME=str(home / ".config"),
                XDG_DATA_HOME=str(home / ".local/share"),
                XDG_CACHE_HOME=str(home / ".cache"),
                XDG_STATE_HOME=str(home / ".local/state"),
            )
            command = [
                self.bwrap,
                *_BASE_ARGS,
                "--info-fd",
                str(write_end),
                *_masks(env),
                *_binds([private, *self.writable]),
                "--chdir",
                str(cwd),
                "--",
                sys.executable,
                "-c",
                _REAPER,
                *argv,
            ]
            yield SandboxRun(command=command, env=inner, pass_fds=(write_end,))
        finally:
            with contextlib.suppress(OSError):
                os.close(write_end)
            with contextlib.suppress(Exception):
                _wait_gone(read_end)
            with contextlib.suppress(OSError):
                os.close(read_end)
            shutil.rmtree(private, ignore_errors=True)

    def _dropped(self, name: str) -> bool:
        if name in self.keep_env:
            return False
        return name in CREDENTIAL_ENV or bool(_DROPPED_PATTERN.search(name))


@dataclass
class SandboxRun:
    """One confined run: the command to start, its environment, and the file descriptor bwrap inherits."""

    command: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]


def _wait_gone(info: int) -> None:
    """Wait until the sandbox's first process (and so its whole PID namespace) is gone; kill it past
    `NAMESPACE_GONE_S`. bwrap wrote its pid to the info pipe as it started."""
    os.set_blocking(info, False)
    try:
        text = os.read(info, 65536).decode("utf-8", "replace")
    except BlockingIOError:
        return  # bwrap never got as far as starting anything
    match = re.search(r'"child-pid"\s*:\s*(\d+)', text)
    if match is None:
        return
    pid = int(match.group(1))
    deadline = time.monotonic() + NAMESPACE_GONE_S
    while _alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)  # the namespace's init: the kernel ends the rest with it
            deadline = time.monotonic() + NAMESPACE_GONE_S
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    """Whether `pid` is a process that has not exited yet (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _homes(env: dict[str, str]) -> list[Path]:
    """The real home folders whose credentials are covered: `$HOME` and the account's."""
    homes = [env.get("HOME"), os.environ.get("HOME")]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    found: list[Path] = []
    for home in homes:
        if home and Path(home).is_dir() and Path(home).resolve() not in found:
            found.append(Path(home).resolve())
    return found


def _masks(env: dict[str, str]) -> list[str]:
    """bwrap arguments covering each credential that exists: an empty folder on a folder, /dev/null else."""
    paths = [home / relative for home in _homes(env) for relative in CREDENTIAL_PATHS]
    paths += [Path(path) for path in SYSTEM_SOCKETS]
    paths.append(Path(f"/run/user/{os.getuid()}"))
    for name in ("SSH_AUTH_SOCK",):
        if env.get(name) or os.environ.get(name):
            paths.append(Path(env.get(name) or os.environ[name]))
    args: list[str] = []
    seen: set[str] = set()
    for path in paths:
        if not os.path.lexists(path) or str(path) in seen:
            continue
        seen.add(str(path))
        real = path.resolve()
        if real.is_dir():
            args += ["--tmpfs", str(real)]
        elif real.exists():
            args += ["--ro-bind", "/dev/null", str(real)]
    return args


def _binds(paths: Iterable[Path]) -> list[str]:
    args: list[str] = []
    for path in dict.fromkeys(Path(path).resolve() for path in paths):
        if path.exists():
            args += ["--bind", str(path), str(path)]
    return args


def _copy_home_files(relatives: Iterable[str], home: Path) -> None:
    """Copy the agent's own files (its login, its settings) from the real home into the private one."""
    real = os.environ.get("HOME")
    if not real:
        return
    for relative in relatives:
        source = Path(real) / relative
        target = home / relative
        try:
            if source.is_dir():
                shutil.copytree(source, target, symlinks=False, dirs_exist_ok=True)
            elif source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        except OSError:
            continue  # a file the agent cannot have is one it logs in without


def refusals(output: str) -> list[str]:
    """Lines of the agent's output that show the sandbox at work: a write refused, a transport refused,
    a process ended with the run; each once, in order."""
    found: list[str] = []
    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith(SANDBOX_MARK):
            line = line[len(SANDBOX_MARK) :].strip()
        elif not _REFUSED.search(line):
            continue
        if line and line[:300] not in found:
            found.append(line[:300])
    return found
