"""The author's consent to call unannotated tools: which ones look read-only, and which ones are trusted.

Most published servers annotate no tool, so by the annotation rule
(`server.annotations.write_risk`) `check` may call none of them, not even a
plain `list_items`. Nothing here changes that rule on its own: a tool is called
only after the server's author names it, with `check --trust-read-only TOOL`
(this run, and recorded in config.yaml's `check.read_only` in a project folder)
or in `check.read_only`. Trust counts like `readOnlyHint: true`; a tool whose
own annotations say it writes is refused, with the reason.

`read_only_candidates` only suggests whom to trust, from the tool's name,
description and parameters. It is a heuristic built for precision: a read verb
in the name (list, get, search, ...), and no word anywhere that writes,
deletes, sends or runs, no parameter that takes a command, code or SQL. It
misses read-only tools with plain names (`weather`) or whose description
mentions a write ("does not delete"), and it can be fooled by a tool that
lies; that is why it is shown to a person, never acted on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import mcp_types

from mcpipechekr._util.yamledit import set_section_list
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.check_report import ReadOnlyCandidate, RefusedTrust, TrustedTool, TrustSource
from mcpipechekr.errors import UserError
from mcpipechekr.server.annotations import annotated_writes, write_risk

FLAG: TrustSource = "--trust-read-only"
CONFIG: TrustSource = "config.yaml check.read_only"

READ_VERBS = frozenset(
    "list get search read query show describe schema find lookup view count inspect browse info stats".split()
)
"""Words of a tool's name that ask for something without changing it."""

WRITES = re.compile(
    r"\b(writ\w*|wrote|delet\w*|remov\w*|creat\w*|updat\w*|insert\w*|upsert\w*|send\w*|sent|run|runs|running|"
    r"ran|exec\w*|eval\w*|shell|command\w*|cmd|script\w*|kill\w*|drop\w*|truncat\w*|destr\w*|wip\w*|purg\w*|"
    r"modif\w*|edit\w*|chang\w*|add|adds|added|adding|upload\w*|mov(e|es|ed|ing)|renam\w*|sav(e|es|ed|ing)|"
    r"publish\w*|push\w*|commit|commits|merg\w*|deploy\w*|install\w*|restart\w*|reset\w*|clear\w*|"
    r"cancel\w*|approv\w*|submit\w*|trigger\w*|invok\w*|spawn\w*|launch\w*|apply|applies|patch\w*|mutat\w*|"
    r"overwrit\w*|replac\w*|append\w*|import\w*|set|sets|setting|post|posts|posting|pay\w*|transfer\w*|"
    r"arbitrary|archiv\w*|restor\w*|revert\w*|email\w*|notif\w*|mark|marks|assign\w*|lock|unlock|"
    r"start|starts|stop|stops|enabl\w*|disabl\w*|sql|code|program)\b",
    re.IGNORECASE,
)
"""Words that say a tool may change something, send something or run something: any one rules it out."""

_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[^A-Za-z0-9]+")


def name_words(name: str) -> list[str]:
    """`getItem`, `get_item`, `get-item`, `items.get` → ['get', 'item'] (lower case)."""
    return [word.lower() for word in _WORD_BREAK.split(name) if word]


def looks_read_only(tool: mcp_types.Tool) -> str | None:
    """What makes the tool look read-only, or None when anything about it says otherwise (see module)."""
    if annotated_writes(tool) is not None:
        return None
    words = name_words(tool.name)
    verbs = [word for word in words if word in READ_VERBS]
    if not verbs:
        return None
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    texts = [" ".join(words), tool.description or "", tool.title or ""]
    for name, prop in properties.items():
        texts.append(" ".join(name_words(str(name))))
        if isinstance(prop, dict) and isinstance(prop.get("description"), str):
            texts.append(prop["description"])
    if any(WRITES.search(text) for text in texts):
        return None
    return f"'{verbs[0]}' in its name; no word of its name, description or parameters writes, sends or runs"


def read_only_candidates(
    tools: Iterable[mcp_types.Tool], trusted: Iterable[str] = ()
) -> list[ReadOnlyCandidate]:
    """The tools check may not call by their annotations, not trusted yet, that look read-only."""
    skip = set(trusted)
    found = []
    for tool in tools:
        if tool.name in skip or write_risk(tool) is None:
            continue
        why = looks_read_only(tool)
        if why is not None:
            found.append(ReadOnlyCandidate(tool=tool.name, why=why))
    return found


def parse_tool_names(values: Iterable[str]) -> list[str]:
    """`--trust-read-only a --trust-read-only b,c` → ['a', 'b', 'c'], in order, each once."""
    names: list[str] = []
    for value in values:
        for name in value.split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return names


def resolve_trust(
    tools: Sequence[mcp_types.Tool], *, flag: Sequence[str] = (), config: Sequence[str] = ()
) -> tuple[list[TrustedTool], list[RefusedTrust]]:
    """Who is trusted as read-only, by whom, and who is refused, and why.

    A name in `flag` the server does not list is a UserError (exit 2) naming
    the listed tools: a typo must not pass silently as "trusted, nothing
    happened". A name in `config` the server no longer lists is only refused:
    the file was written for an earlier version of the server. A tool whose
    annotations say it writes is refused either way.
    """
    listed = {tool.name: tool for tool in tools}
    unknown = [name for name in flag if name not in listed]
    if unknown:
        raise UserError(
            f"--trust-read-only names tool(s) the server does not list: {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(listed))})"
        )
    trusted: list[TrustedTool] = []
    refused: list[RefusedTrust] = []
    for by, names in ((FLAG, flag), (CONFIG, config)):
        for name in names:
            if any(entry.tool == name for entry in [*trusted, *refused]):
                continue
            tool = listed.get(name)
            declared = annotated_writes(tool) if tool is not None else None
            if tool is None:
                refused.append(RefusedTrust(tool=name, by=by, reason="the server does not list it"))
            elif declared is not None:
                reason = f"{declared}: annotations that say a tool writes win over trust"
                refused.append(RefusedTrust(tool=name, by=by, reason=reason))
            else:
                trusted.append(TrustedTool(tool=name, by=by))
    return trusted, refused


def record_read_only(config_path: Path, names: Iterable[str]) -> list[str]:
    """Add `names` to config.yaml's `check.read_only`, keeping the rest of the file; return the names added.

    Why in config.yaml: the trust is the author's decision about their server,
    made once; every later check, baseline and propose of the project reads it
    from there, and it is reviewed in the same file as the server it is about.
    """
    import yaml

    text = config_path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    section = data.get("check") if isinstance(data, dict) else None
    present = section.get("read_only") if isinstance(section, dict) else None
    current = [str(name) for name in present] if isinstance(present, list) else []
    added = [name for name in names if name not in current]
    if not added:
        return []
    try:
        edited = set_section_list(text, "check", "read_only", [*current, *added])
    except (ValueError, yaml.YAMLError) as exc:
        raise UserError(
            f"{config_path}: could not record check.read_only ({exc}); add `read_only: "
            f"[{', '.join([*current, *added])}]` under `check:` by hand"
        ) from None
    atomic_write_text(config_path, edited)
    return added


def ask_read_only_trust(
    candidates: Sequence[ReadOnlyCandidate], ask: Callable[[str], str], say: Callable[[str], None]
) -> list[str]:
    """Ask the server's author which candidates only read: all, each in turn, or none (the default).

    Used by `init` at a terminal, where the author is present to decide; the
    answer is what `record_read_only` writes. Anything but a clear yes is a no.
    """
    if not candidates:
        return []
    say("These tools are not annotated read-only, so check, baseline and propose will not call them:")
    for candidate in candidates:
        say(f"  {candidate.tool}: {candidate.why}")
    answer = ask("Do they only read? Trust all [a], ask for each [e], or none [N]: ").strip().lower()
    if answer in ("a", "all", "y", "yes"):
        return [candidate.tool for candidate in candidates]
    if answer not in ("e", "each"):
        return []
    return [
        candidate.tool
        for candidate in candidates
        if ask(f"Trust {candidate.tool} as read-only? [y/N]: ").strip().lower() in ("y", "yes")
    ]
