"""Description text that addresses the agent instead of describing the tool ("tool poisoning").

A tool description is read by the model, not only by people, so a server can
smuggle instructions into it: ignore your other instructions, do not tell the
user, read ~/.ssh/id_rsa and pass it as an argument, call this other server
first. Such text rarely shows in a client's UI, and hidden characters
(zero-width, bidirectional controls, Unicode tag characters) or HTML comments
can make it invisible even where it does.

Every text an agent reads is scanned: the tool's description and each
parameter's description (the finding's `location` says which), and every match
is reported with its span, so the report points at the exact characters.

| id | severity | what |
| --- | --- | --- |
| TEF-S001 | error | instruction override: "ignore/disregard/forget previous instructions" |
| TEF-S002 | error | concealment from the user: "do not tell the user", "without informing the user" |
| TEF-S003 | warning | reaching for files or secrets: "read ~/.ssh/id_rsa", "include the API key" |
| TEF-S004 | warning | steering to other tools, servers or URLs: "before using this tool you must call …" |
| TEF-S005 | warning | speaking to the model: `<IMPORTANT>`, `<system>`, "you are now …" |
| TEF-S006 | error | hidden text: HTML comments, zero-width, bidi-control or tag characters |
| TEF-S007…S010 | | other servers' tools, exfiltration, hijack, orders to the assistant (attacks.py) |

Limits: these are patterns, not understanding. Paraphrased or non-English
instructions get through, and a tool that legitimately reads files may match
TEF-S003 (accept it with `--accept-risk TOOL:TEF-S003`). TEF-S003 does not count
a request right after a negation ("Do not include any API keys in your query"),
so a paraphrase that negates something else before it gets through as well.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from mcpipechekr.artifacts.tef_report import SecurityFinding
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.lint._text import schema_properties
from mcpipechekr.lint.attacks import scan_attacks
from mcpipechekr.lint.vocabulary import ServerVocabulary


@dataclass(frozen=True)
class Pattern:
    rule_id: str
    severity: str
    regex: re.Pattern[str]
    message: str
    negatable: bool = False
    """The match does not count right after "do not", "never", …: the text forbids what it names."""


_F = re.IGNORECASE | re.DOTALL
_SECRETS = (
    r"(~/\.ssh\S*|\.ssh/\S*|id_rsa|id_ed25519|\.env\b|\.aws/\S*|/etc/passwd|/etc/shadow|\.netrc|"
    r"api[\s_-]?keys?|passwords?|passphrases?|credentials?|private[\s_-]?keys?|secret[\s_-]?keys?|"
    r"access[\s_-]?tokens?|auth(?:entication)?[\s_-]?tokens?|mcp\.json|config\.json)"
)
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "TEF-S001",
        "error",
        re.compile(
            r"\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|your\s+)*"
            r"(previous|prior|above|earlier|other|system|original)?\s*(instructions?|prompts?|rules?|guidelines?)\b",
            _F,
        ),
        "tells the agent to set aside its instructions",
    ),
    Pattern(
        "TEF-S002",
        "error",
        re.compile(
            r"\b(do\s+not|don'?t|never|must\s+not)\s+(tell|inform|mention|reveal|show|notify|alert|disclose)\b"
            r"[^.\n]{0,40}?\buser\b|\bwithout\s+(telling|informing|notifying|alerting|asking)\s+(the\s+)?user\b|"
            r"\bwithout\s+(letting|making)\s+(the\s+)?user\s+(know|aware|see|notice)\b|"
            r"\bwithout\s+the\s+user\s+(knowing|noticing|seeing)\b|"
            r"\bkeep(ing)?\s+(the\s+)?user\s+(unaware|in\s+the\s+dark|uninformed)\b|"
            r"\b(hide|conceal)\s+(this|it|that|the\s+\w+)\s+from\s+(the\s+)?user\b|\bkeep\s+this\s+(secret|hidden)\b",
            _F,
        ),
        "asks the agent to hide something from its user",
    ),
    Pattern(
        "TEF-S003",
        "warning",
        re.compile(
            r"\b(read|open|cat|load|fetch|send|include|upload|attach|pass|provide|copy|extract|paste)\b"
            r"[^.\n]{0,60}?" + _SECRETS,
            _F,
        ),
        "asks the agent to read or hand over files or secrets",
        negatable=True,
    ),
    Pattern(
        "TEF-S004",
        "warning",
        re.compile(
            r"\b(before|after)\s+(using|calling|running|invoking|answering)[^.\n]{0,60}?"
            r"\b(you\s+must|always|first)\s+(call|use|invoke|run|read|send)\b|"
            r"\byou\s+must\s+(first\s+|always\s+)?(call|invoke|use)\s+(the\s+)?[\w.-]+\s+(tool|server)\b|"
            r"\b(send|forward|post|upload|report)\b[^.\n]{0,60}?\bto\s+https?://\S+",
            _F,
        ),
        "directs the agent to other tools, servers or addresses",
    ),
    Pattern(
        "TEF-S005",
        "warning",
        re.compile(
            r"<\s*/?\s*(important|system|instructions?|secret|admin)\s*>|\byou\s+are\s+now\b|"
            r"\b(as|dear)\s+an?\s+(ai|assistant|language\s+model)\b|\bnote\s+to\s+(the\s+)?(ai|assistant|model)\b",
            _F,
        ),
        "speaks to the model rather than describing the tool",
    ),
)

_NEGATED = re.compile(
    r"\b(do\s+not|don['\u2019]?t|never|must\s+not|mustn['\u2019]?t|should\s+not|shouldn['\u2019]?t"
    r"|shall\s+not|cannot|can['\u2019]?t)\s+(ever\s+|also\s+)?$",
    re.IGNORECASE,
)
"""A negation just before a verb: "Do not include any API keys" warns the agent, it asks for nothing.
"Don't forget to include the API key" is not negated: the negation must stand right before the verb."""
_NOT_A_VERB = re.compile(
    r"\b(?:under|heavy|high|low|peak|full|the|a|an|of|on|at|no|any|this|that|its|their|server|page|work)\s+$",
    re.IGNORECASE,
)
"""A word before the verb that makes it a noun: "reliable under load", "the page load"."""
_NEGATION_INSIDE = re.compile(r"\b(?:never|not|no|without|neither|nor)\b|n['\u2019]t\b", re.IGNORECASE)
_PER_SECRET = re.compile(r"\b(?:per|each|every|by)\s+$", re.IGNORECASE)


def _not_a_request(text: str, match: re.Match[str]) -> bool:
    """Whether a match of a negatable pattern asks for nothing: negated before its verb ("do not include
    API keys") or between the verb and what it names ("reads the page and never emits API keys"), its verb
    a noun ("reliable under load, a … API key"), or the secret a unit ("periods per API key")."""
    secret = match.start(match.lastindex or 0)
    return bool(
        _NEGATED.search(text, 0, match.start())
        or _NEGATION_INSIDE.search(text, match.start(), secret)
        or _NOT_A_VERB.search(text, max(0, match.start() - 20), match.start())
        or _PER_SECRET.search(text, max(0, secret - 10), secret)
    )


_HTML_COMMENT = re.compile(r"<!--.*?(-->|$)", re.DOTALL)
_ZERO_WIDTH = set("\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad")
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c")


def _invisible(ch: str) -> bool:
    return ch in _ZERO_WIDTH or ch in _BIDI or 0xE0000 <= ord(ch) <= 0xE007F


def _pictograph_before(text: str, index: int) -> bool:
    """Whether an emoji (past its variation selectors and skin tones) ends just before text[index]."""
    while index > 0 and (text[index - 1] == "\ufe0f" or 0x1F3FB <= ord(text[index - 1]) <= 0x1F3FF):
        index -= 1
    return index > 0 and unicodedata.category(text[index - 1]) == "So"


def _joins_emoji(text: str, index: int) -> bool:
    """A zero-width joiner inside an emoji sequence (👩‍💻, 🏳️‍🌈): how such emoji are written."""
    after = index + 1 < len(text) and unicodedata.category(text[index + 1]) == "So"
    return text[index] == "\u200d" and after and _pictograph_before(text, index)


def _hidden_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of consecutive invisible characters (a joiner inside an emoji is none)."""
    start = None
    for index, ch in enumerate(text):
        if _invisible(ch) and not _joins_emoji(text, index):
            if start is None:
                start = index
        elif start is not None:
            yield start, index
            start = None
    if start is not None:
        yield start, len(text)


def _describe_chars(span: str) -> str:
    names = []
    for ch in dict.fromkeys(span):
        names.append(f"U+{ord(ch):04X} {unicodedata.name(ch, 'TAG CHARACTER')}")
    return ", ".join(names[:4]) + (", …" if len(names) > 4 else "")


def scan_text(tool: str, text: str, location: str = "description") -> list[SecurityFinding]:
    """Findings in one text an agent reads, ordered by position."""
    findings = []

    def add(rule_id: str, severity: str, start: int, end: int, message: str) -> None:
        findings.append(
            SecurityFinding.in_text(
                tool, text, start, end, rule_id=rule_id, severity=severity, location=location, message=message
            )
        )

    for pattern in PATTERNS:
        for match in pattern.regex.finditer(text):
            if pattern.negatable and _not_a_request(text, match):
                continue
            add(pattern.rule_id, pattern.severity, match.start(), match.end(), pattern.message)
    for match in _HTML_COMMENT.finditer(text):
        add(
            "TEF-S006",
            "error",
            match.start(),
            match.end(),
            "HTML comment: hidden from people in most clients, read by the model",
        )
    for start, end in _hidden_runs(text):
        add(
            "TEF-S006",
            "error",
            start,
            end,
            f"{end - start} invisible character(s) ({_describe_chars(text[start:end])}): "
            "text a person cannot see",
        )
    return sorted(findings, key=lambda f: (f.start, f.rule_id))


def scan_tool(tool: ToolDefinition, own_names: Collection[str] = ()) -> list[SecurityFinding]:
    """Findings in the description and every parameter description of a tool.

    own_names: the server's tool, parameter and output field names, so that the attack rules
    (attacks.py) can tell a mention of the server's own tools from another server's.
    """

    def scan(text: str, location: str) -> list[SecurityFinding]:
        found = scan_text(tool.name, text, location) + scan_attacks(tool.name, text, own_names, location)
        return sorted(found, key=lambda f: (f.start, f.rule_id))

    findings = scan(tool.description or "", "description")
    for name, prop in schema_properties(tool.input_schema).items():
        description = prop.get("description")
        if isinstance(description, str):
            findings += scan(description, f"parameter '{name}'")
    return findings


def own_names(tools: Sequence[ToolDefinition]) -> set[str]:
    """The server's own vocabulary (vocabulary.py): tool names and titles, parameters, output fields, enum
    values and names its descriptions present as results ("if `next_range` is present, call again with it"
    names a field of the tool's own result)."""
    return set(ServerVocabulary.of(tools).names)


def scan_tools(tools: Sequence[ToolDefinition]) -> list[SecurityFinding]:
    """Findings of every tool, errors first, then by tool and position."""
    names = own_names(tools)
    findings = [finding for tool in tools for finding in scan_tool(tool, names)]
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.tool, f.location, f.start))
