"""DEMO STAND-IN for a coding agent: applies a prepared patch instead of writing a fix.

This is not an agent and fixes nothing by itself. It lets the bundled example's
fix loop close offline, with no model and no API key: given the fix prompt for
one bug, it picks the maintainer's patch in `fixes/` that matches the bug and
applies it to the current directory (the server's repository), then prints the
completion promise the fix loop waits for. A real run uses a real agent
(opencode, Claude Code, Codex, aider, ...), configured under `fix:` in
config.yaml.

    python demo_fixer.py PROMPT_FILE     (or the prompt on stdin)

How it picks a patch: the prompt carries the bug entry as a JSON block
(`id`, `type`, `tool`, `trigger`, `observed`, `expected`, `details`).
`fixes/index.json` lists each patch with the `tool` it changes, the kind of
defect it `fixes` (the bug's `type`) and `matches`, phrases that identify the
defect. A patch qualifies when tool and type agree and at least one phrase
occurs in the bug's own text; the one with the most phrases wins. The
reviewer's notes in the prompt are deliberately not searched: "prefer a
sort_order parameter" says how to fix, not which defect it is.

Exit status: 0 with the promise when a patch was applied; 0 without the
promise when no patch matches or the patch is already applied (there is
nothing to change, so nothing for the loop to commit); 2 when the prompt holds
no bug entry or the patch does not apply.

The patches are found next to this file, so the script works from any copy of
the example folder (the harness runs it from its workspace repository).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXES = Path(__file__).resolve().parent / "fixes"
PROMISE = "<promise>COMPLETE</promise>"
_JSON_BLOCK = re.compile(r"```json\s*\n(.*?)\n```", re.DOTALL)


def bug_entry(prompt: str) -> dict[str, Any] | None:
    """The first JSON block of the prompt that looks like a bug entry."""
    for block in _JSON_BLOCK.findall(prompt):
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict) and "id" in value and "type" in value:
            return value
    return None


def bug_text(bug: dict[str, Any]) -> str:
    """Everything the bug entry says about the defect, lower-cased, for phrase matching."""
    parts = [bug.get(key) or "" for key in ("id", "trigger", "observed", "expected")]
    parts.append(json.dumps(bug.get("details") or {}))
    return " ".join(str(part) for part in parts).lower()


def pick_patch(bug: dict[str, Any], index: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The index entry for this bug: same tool and defect kind, most matching phrases; None if none."""
    text = bug_text(bug)
    best: tuple[int, dict[str, Any]] | None = None
    for entry in index:
        if entry.get("tool") != bug.get("tool") or entry.get("fixes") != bug.get("type"):
            continue
        hits = sum(1 for phrase in entry.get("matches", []) if phrase.lower() in text)
        if hits and (best is None or hits > best[0]):
            best = (hits, entry)
    return best[1] if best else None


def git_apply(patch: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "apply", *flags, str(patch)], capture_output=True, text=True, check=False)


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] != "-":
        prompt = Path(argv[1]).read_text(encoding="utf-8")
    else:
        prompt = sys.stdin.read()
    bug = bug_entry(prompt)
    if bug is None:
        print("demo fixer: the prompt holds no bug entry (a ```json block with id and type).")
        return 2
    index = json.loads((FIXES / "index.json").read_text(encoding="utf-8"))
    entry = pick_patch(bug, index)
    if entry is None:
        print(f"demo fixer: no prepared patch matches {bug['id']}; a real agent is needed for this one.")
        return 0
    patch = FIXES / entry["patch"]
    if git_apply(patch, "--check").returncode == 0:
        applied = git_apply(patch)
        if applied.returncode != 0:
            print(f"demo fixer: git apply {patch.name} failed: {applied.stderr.strip()}")
            return 2
        print(f"demo fixer: applied fixes/{patch.name} for {bug['id']} ({entry['summary']})")
        print(PROMISE)
        return 0
    if git_apply(patch, "--reverse", "--check").returncode == 0:
        print(
            f"demo fixer: fixes/{patch.name} is already applied; there is nothing to change for {bug['id']}."
        )
        return 0
    print(f"demo fixer: fixes/{patch.name} does not apply to this server.py (changed by hand?).")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
