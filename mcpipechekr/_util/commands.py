"""Commands named in messages, spelled so that they run from where the user is.

Every "next, run `mcpipechekr …`" hint is only useful if typing it works. When
the package lives in a virtual environment that is not activated (the README's
quick start runs `.venv/bin/doit`), the bare names `mcpipechekr` and `doit`
are not on PATH, or name another installation. `runnable` rewrites the
commands quoted in a message to the path of this installation's scripts
(`.venv/bin/mcpipechekr …`, relative to the working directory when inside
it), and leaves them alone when the bare name already reaches them. When the
graph runs through `mcpipechekr doit`/`mcpipechekr loop` (a folder may have no
dodo.py), a quoted `doit …` becomes that command. Messages are written with the
bare names; the console and `UserError` apply this on the way out, so no
message has to think about it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

SCRIPTS = ("mcpipechekr", "doit")
_QUOTED = re.compile(r"`(" + "|".join(SCRIPTS) + r")(?=[ `])")
_DOIT_LOOP = re.compile(r"`doit loop(?=[ `])")

doit_through_cli = False
"""True while the graph runs inside `mcpipechekr doit`/`loop`: hints then name those commands."""


def script_command(name: str) -> str:
    """How to invoke this installation's script `name` from the working directory."""
    bindir = Path(sys.executable).parent  # a venv's scripts sit beside its interpreter (not resolved)
    ours = bindir / name
    if not ours.exists():
        return name  # not installed as a script beside this interpreter (a system install, a zipapp)
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(ours):
        return name
    try:
        return str(ours.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(ours.absolute())


def runnable(text: str) -> str:
    """`text` with each quoted `mcpipechekr …` / `doit …` command spelled as `script_command` says."""
    if "`" not in text:
        return text
    if doit_through_cli:
        text = _DOIT_LOOP.sub("`mcpipechekr loop", text).replace("`doit ", "`mcpipechekr doit ")
    spelled = {name: script_command(name) for name in SCRIPTS if f"`{name}" in text}
    return _QUOTED.sub(lambda match: "`" + spelled.get(match.group(1), match.group(1)), text)
