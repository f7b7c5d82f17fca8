"""The slow notes server (tests/servers/slow_notes) installed as a package, as users install published ones.

It goes into a virtual environment of its own, from its source folder with
pip, so what MCPipeChekr is pointed at is a console script in that
environment's `bin/`, with no checkout of the server anywhere near the project.
`deps="registry"` installs its dependencies (mcp) from the package index, as a
user would; `deps="here"` makes the interpreter running this code's packages
visible to the new environment (a `.pth` file) and installs the server alone,
offline and in seconds, for the tests.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Literal

SOURCE = Path(__file__).resolve().parents[1] / "servers" / "slow_notes"
SCRIPT = "slow-notes-mcp"


def venv_purelib(python: Path) -> str:
    """Where the virtual environment of `python` installs pure-Python packages."""
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def newcomer_commands(script: Path, home: Path, start_s: float) -> list[tuple[str, ...]]:
    """The three commands docs/own-server.md opens with, for the installed server: init, propose, loop."""
    init = ("mcpipechekr", "init", "--command", str(script), "--env", f"HOME={home}")
    return [
        (*init, "--env", f"SLOW_NOTES_START_S={start_s:g}"),
        ("mcpipechekr", "tasks", "propose"),
        ("doit", "baseline", "loop"),
    ]


def install_slow_notes(target: Path, *, deps: Literal["registry", "here"] = "here") -> Path:
    """A venv at `target` with the slow notes server installed; returns its console script."""
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = target / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    source = target / "source"  # built from a copy, so the tests' tree stays clean
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    if deps == "here":
        purelib = venv_purelib(python)
        ours = sysconfig.get_paths()["purelib"]
        (Path(purelib) / "outer-packages.pth").write_text(ours + "\n", encoding="utf-8")
        # A wheel built by this interpreter's pip, installed alone: nothing is fetched or built there.
        wheels = target / "wheel"
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run([*pip, "--no-deps", "--no-index", *map(str, wheels.glob("*.whl"))], check=True)
    else:
        subprocess.run([*pip, str(source)], check=True, stdout=subprocess.DEVNULL)
    script = target / "bin" / SCRIPT
    if not script.exists():
        raise RuntimeError(f"{SOURCE} installed no {SCRIPT} into {target}")
    return script


if __name__ == "__main__":
    print(install_slow_notes(Path(sys.argv[1]), deps="registry" if "--registry" in sys.argv else "here"))
