"""Record `doit loop` on the bundled example and save the README's picture, docs/loop.svg.

The picture is a real run, not a drawing: the script copies the project into a
temporary folder, runs `doit baseline`, then `doit loop` in a pseudo-terminal,
answers the review prompt like a person would (an annotation, `approve`, and
`exit` at the second review), and renders what the terminal showed with rich's
SVG export. Lines that only repeat (doit's "up to date" lines, the demo fixer's
retries, the narrative under the review table) are folded so the picture fits
a screen; nothing is rewritten. The live progress line is drawn over and over
in place and erased before any output: the picture keeps what the terminal
kept (`shown`), so the progress line is not in it.

Run: .venv/bin/python docs/record_loop.py [--out docs/loop.svg] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

import pexpect
from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from project import copy_project, doit  # noqa: E402  (the tests' project copy, the files a user has, and doit)

WIDTH = 110


def record(project: Path) -> str:
    """The loop's terminal output, with colours, answering the review prompts."""
    env = {**os.environ, "COLUMNS": str(WIDTH), "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    baseline = doit(project, env, "baseline", timeout=600)
    if baseline.returncode != 0:
        output = baseline.stdout + baseline.stderr
        raise SystemExit(f"doit baseline exited with {baseline.returncode}:\n{output[-2000:]}")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "doit", "loop"],
        cwd=str(project),
        env=env,
        encoding="utf-8",
        timeout=600,
        dimensions=(60, WIDTH),
    )
    chunks: list[str] = []

    def until(pattern: str) -> None:
        child.expect(pattern)
        chunks.append(child.before + child.after)

    until("review> ")
    child.sendline("annotate prefer a sort_order parameter")
    until("review> ")
    child.sendline("approve")
    until("review> ")
    child.sendline("exit")
    child.expect(pexpect.EOF)
    chunks.append(child.before)
    child.close()
    if child.exitstatus != 0:
        raise SystemExit(f"doit loop exited with {child.exitstatus}:\n{''.join(chunks)[-2000:]}")
    return "".join(chunks).replace("\r\n", "\n")


ANSI = re.compile(r"\x1b\[[0-9;]*m")
ERASE = "\x1b[2K"


def shown(line: str) -> str:
    """What a terminal keeps of a line redrawn with carriage returns: its last drawing that was not erased."""
    drawn = [part.replace(ERASE, "") for part in line.split("\r")]
    kept = [part for part in drawn if ANSI.sub("", part).strip()]
    return kept[-1] if kept else ""


def fold(transcript: str) -> list[str]:
    """Drop doit's up-to-date lines, fold the fixer's retries and the narrative after the review table."""
    kept: list[str] = []
    skipping_narrative = False
    retries = 0
    for raw in transcript.split("\n"):  # not splitlines(): a carriage return redraws, it ends no line
        line = shown(raw)
        plain = ANSI.sub("", line)
        if plain.startswith("-- "):
            continue
        if "Phase 2 evaluation of" in plain:
            skipping_narrative = True
            kept.append("  … (the Phase 2 narrative: priorities, per-task efficiency, answers to review)")
            continue
        if skipping_narrative:
            if plain.startswith("Commands:") or plain.startswith("review>"):
                skipping_narrative = False
            else:
                continue
        if re.match(r"\s+run \d+: ", plain) and "server restarted" not in plain:
            retries += 1
            continue
        if retries:
            kept.append(f"  … ({retries} agent run(s) without the completion promise)")
            retries = 0
        kept.append(line)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "loop.svg"))
    parser.add_argument("--keep", help="run in this folder and keep it (default: a temporary folder)")
    args = parser.parse_args()
    if args.keep:
        project = Path(args.keep)
        project.mkdir(parents=True, exist_ok=False)
        copy_project(project)
        transcript = record(project)
    else:
        with tempfile.TemporaryDirectory() as folder:
            copy_project(Path(folder))
            transcript = record(Path(folder))
    console = Console(record=True, width=WIDTH, force_terminal=True, file=open(os.devnull, "w"))
    for line in fold(transcript):
        console.print(Text.from_ansi(line), soft_wrap=True)
    console.save_svg(args.out, title="doit loop — MCPipeChekr on the bundled example")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
