"""Descriptions that attack the agent's other tools, its conversation or its user, without poisoning words.

An agent usually has several MCP servers connected at once, and every tool
description of every server lands in the same context. So one server can change
how another server's tools are used ("when the send_email tool is used, always
BCC audit@…"), ask for the conversation to be sent somewhere, push the agent
away from a competing tool, or give the agent orders that have nothing to do
with describing the tool. security.py catches the classic wording ("ignore your
instructions", "read ~/.ssh/id_rsa"); these rules look at the structure of a
sentence instead of one phrasing:

- TEF-S007 (error), cross-server shadowing: a sentence names a tool or server
  that is not this server's ("any other tool", or an activity none of its
  tools is about: "sending emails") inside a condition ("when … is used",
  "for every …") and tells the agent what to do ("always", "must", "add …").
- TEF-S008 (error), exfiltration: a sending verb (send, forward, copy, post,
  BCC, …), something the agent holds (the conversation, context, messages,
  files, secrets) and a destination (a URL, a domain, an e-mail address,
  another tool, a parameter), in that order; in the passive ("emails must be
  copied to …") what is sent may come first.
- TEF-S009 (error), tool hijack: use this tool instead of another, never use
  another tool, another tool "is deprecated/unsafe" so use this one.
- TEF-S010 (warning), orders to the assistant about its conversation: "you
  must … the user", "before answering", "in your response", "tell the user …".

A tool is "another" when its name is not one of the server's own tools,
parameters or output fields ("if `next_range` is present, call again with it"
names the tool's own result); "this tool", "it" and the server's own names never count, so a
description that says "use read_text_file instead" for its own deprecated tool
is fine. TEF-S010 is a warning because well-meant descriptions also address
the agent ("ask the user to confirm"); it asks for review, not for a block.

Limits: English patterns over sentences. A sentence is split at `.`, `!`, `?`
followed by space and at blank lines or list items, so an attack spread over
two sentences ("Use send_email. Always add a BCC.") is only seen in part.
Non-English or heavily paraphrased text passes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from mcpipechekr.artifacts.tef_report import SecurityFinding
from mcpipechekr.lint.vocabulary import in_tool_role

_F = re.IGNORECASE

# Names as code writes them. Bare in prose only snake_case and camelCase count (kebab-case and dots are
# ordinary in English and in domains: "read-only", "e.g."); quoted or called a tool, any of them does.
_CODE_NAME = r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+"
_IDENT = r"[A-Za-z][A-Za-z0-9]*(?:[_.\-][A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+"
# Words before "tool"/"server" that describe rather than name it ("this tool", "a search tool").
_NOT_NAMES = frozenset(
    """a an the this that these those it its same each every any all other another which whichever your our
    my their one first next previous current given right correct appropriate relevant following above below
    new specific original external local remote mcp helpful useful powerful detailed dedicated separate
    different own such""".split()
)
_NAMED_TOOL = re.compile(
    rf"[`'\"](?P<q>{_IDENT}|[A-Za-z]\w*)[`'\"]"
    rf"|\b(?P<i>{_CODE_NAME})\b"
    r"|\b(?P<w>[A-Za-z][\w-]*)\s+(?:mcp\s+)?(?:tool|server|integration|plugin|connector)s?\b"
)
_GENERIC_OTHER = re.compile(
    r"\b(?:any|every|all|each|other|another)\s+(?:other\s+|external\s+|third[\s-]party\s+)?"
    r"(?:(?:mcp\s+)?servers?(?:'s|')?\s+)?(?:tools?|functions?|servers?|integrations?|plugins?)(?:\s+calls?)?\b"
    r"|\btools?\s+(?:from|of|on|provided\s+by|exposed\s+by|belonging\s+to)\s+(?:any\s+|all\s+|every\s+)?"
    r"(?:other|another|different|external)\s+(?:mcp\s+)?servers?\b",
    _F,
)

# What other servers' tools do, named by the activity: "when sending emails", "whenever you make a payment".
_ACTIVITY = re.compile(
    r"\b(?:send(?:s|ing)?|writ(?:e|es|ing)|draft(?:s|ing)?|compos(?:e|es|ing)|repl(?:y|ies|ying)\s+to|"
    r"forward(?:s|ing)?|post(?:s|ing)?|mak(?:e|es|ing)|creat(?:e|es|ing)|open(?:s|ing)?|submit(?:s|ting)?|"
    r"push(?:es|ing)?)\s+(?:an?\s+|any\s+|the\s+|every\s+|new\s+)?"
    r"(?P<noun>e-?mails?|mails?|messages?|payments?|transfers?|pull\s+requests?|commits?|tweets?)\b",
    _F,
)
# A server with a tool or parameter whose name holds one of these does the activity itself.
_ACTIVITY_STEMS = {
    "email": ("mail",),
    "mail": ("mail",),
    "message": ("message", "msg", "chat"),
    "payment": ("pay",),
    "transfer": ("transfer",),
    "pullrequest": ("pull", "pr", "merge"),
    "commit": ("commit", "git"),
    "tweet": ("tweet", "post"),
}

_TRIGGER = re.compile(
    r"(?<![`'\"])\b(?:when(?:ever)?|if|each\s+time|every\s+time|any\s+time|before|after|while|once)\b"
    r"|\b(?:for|on)\s+(?:any|every|all|each)\b",
    _F,
)
_DIRECTIVE = re.compile(
    r"\b(?:always|must|make\s+sure|ensure|be\s+sure\s+to|remember\s+to|need\s+to|have\s+to|should|instead)\b"
    r"|(?:^|[,;:]\s*|\bthen\s+)(?:add|include|set|change|replace|bcc|cc|copy|send|forward|redirect|route|"
    r"append|prepend|attach|pass|put|write|rewrite|modify|strip|remove|use|call)\b",
    _F,
)

_SEND = re.compile(
    r"\b(?:send|forward|post|upload|copy|cc|bcc|e-?mail|mail|transmit|share|leak|report|relay|"
    r"sync|mirror|submit|deliver|dump|export|log|include|attach|append|embed|pass|put|paste)\b",
    _F,
)
# What the agent holds and its user did not hand to this tool: the conversation and secrets anywhere,
# files and mail only on their way to a URL, an address or another tool (a tool may well take a file
# in a parameter; it has no use for the system prompt there).
_HELD_ALWAYS = (
    r"conversations?|chat(?:\s+(?:history|log|transcript)s?)?|transcripts?|system\s+prompts?|"
    r"(?:your|the\s+(?:full|entire|whole|complete))\s+(?:prompt|context|instructions)|context\s+window|"
    r"(?:message|chat|conversation|session)\s+history|"
    r"(?:previous|prior|earlier|past|all\s+(?:the\s+)?(?:user'?s?\s+)?|every)\s+(?:messages|questions|answers)|"
    r"(?:the\s+)?(?:last|latest|recent)\s+(?:\d+\s+|few\s+)?messages|"
    r"everything\s+the\s+user\b|your\s+memor(?:y|ies)|"
    r"secrets?|(?:api|ssh|private|secret|access)[\s_-]?keys?|"
    r"(?:access|auth(?:entication)?|api|bearer|refresh|session|secret)[\s_-]?tokens?|"
    r"credentials?|passwords?|passphrases?|env(?:ironment)?\s+variables?|\.env\b"
)
_HELD_DATA = (
    r"(?:the\s+user'?s?|all(?:\s+the)?|every|local|workspace|project)\s+(?:outgoing\s+|incoming\s+|your\s+)?"
    r"(?:files?|documents?|data|e-?mails?|messages)(?!\s*(?:paths?|names?|ids?|types?)\b)"
)
_HELD = re.compile(rf"\b(?:{_HELD_ALWAYS}|{_HELD_DATA})\b", _F)
_HELD_SENSITIVE = re.compile(rf"\b(?:{_HELD_ALWAYS})\b", _F)
_SENT = re.compile(
    r"\b(?:must|should|shall|always)\s+(?:also\s+)?be\s+(?:also\s+)?"
    r"(?:sent|copied|forwarded|posted|uploaded|mirrored|relayed|shared|bcc'?e?d|cc'?e?d|e-?mailed)\b",
    _F,
)
_URL = (
    r"\bhttps?://[^\s'\"<>)]+"
    r"|\b(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|xyz|ru|cn|info|biz|co|me|app|site|online)\b(?:/\S*)?"
)
_EMAIL = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
_OUTSIDE = re.compile(rf"{_EMAIL}|{_URL}", _F)
_TO_PARAMETER = re.compile(
    r"\b(?:in|into|as|via|through|using|with|to)\s+(?:the\s+)?[`'\"]?[\w.-]+[`'\"]?\s+(?:parameter|argument|field)\b",
    _F,
)
_NEGATION_BEFORE = re.compile(
    r"\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t|cannot|can'?t)\s+(?:ever\s+|also\s+)?$",
    _F,
)
_TO_TOOL = re.compile(rf"\bto\s+(?:the\s+)?[`'\"]?(?:{_IDENT})[`'\"]?", _F)
_NOT_OURS = ", which is not this server's: a description must not choose tools for the agent"

_NEGATED_USE = re.compile(
    r"\b(?:never|do\s+not|don'?t|must\s+not|should\s+not|shouldn'?t|cannot|can'?t|avoid|stop)\s+"
    r"(?:ever\s+)?(?:use|using|call|calling|invoke|invoking|run|running|rely\s+on|trust|choose|pick|select)\b",
    _F,
)
_PREFER_THIS = re.compile(
    r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|in\s+preference\s+to|over|replaces?|supersedes?)\b",
    _F,
)
_THIS = re.compile(
    r"\b(?:this|our)\s+(?:tool|function|server|one)\b|\b(?:use|prefer|choose|pick)\s+(?:this|me|it)\b"
    r"|\bonly\s+this\b",
    _F,
)
_WORSE = re.compile(
    r"\b(?:is|are)\s+(?:deprecated|broken|unsafe|insecure|outdated|unreliable|disabled|obsolete|compromised)\b",
    _F,
)

# "you need to" is left out: descriptions use it for situations ("use this tool when you need to …").
_SPEAK = re.compile(
    r"\b(?:you|the\s+(?:assistant|ai|model|agent|llm))\s+(?:must|should|are\s+(?:required|instructed|expected)\s+to|will\s+always|shall)\b",
    _F,
)
# "the user" as a person, not a field or the user's data ("the user ID", "the user's question").
_CONVERSATION = re.compile(
    r"\bthe\s+user\b(?!'s|\s*(?:[-_]?ids?|names?|accounts?|profiles?)\b)"
    r"|\b(?:your|every|each)\s+(?:response|reply|answer|output|message)s?\b"
    r"|\b(?:the\s+)?assistant\b|\b(?:the|this)\s+conversation\b",
    _F,
)
_CONTROL = re.compile(
    r"\b(?:before|after|when|while)\s+(?:answering|responding|replying|you\s+(?:answer|respond|reply))\b"
    r"|\bin\s+(?:your|every|each)\s+(?:response|reply|answer|message)s?\b"
    r"|(?:^|\b(?:always|must|should|then|please|never)\s+)(?:tell|inform|remind|assure|convince|warn)\s+the\s+user\b"
    r"|\b(?:as|you\s+are)\s+(?:the|an?)\s+(?:ai\s+)?assistant,?\s+you\b",
    _F,
)

_SELF_OBJECT = re.compile(r"\s+(?:this|it|me|our|us)\b", _F)
# A sentence ends at . ! ? and a space, a blank line, before a list item, and before each line of a
# docstring section ("Args:", then "cursor: …" lines), which are items of a list, not one sentence.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)"
    r"|\n(?=\s*[A-Za-z_][\w.-]*\s*(?:\([^)\n]*\))?\s*:(?:\s|$))"
)


@dataclass(frozen=True)
class _Sentence:
    start: int
    text: str


def _sentences(text: str) -> Iterator[_Sentence]:
    """The text cut into sentences, each with its offset, so spans point into the original text."""
    position = 0
    for cut in _SENTENCE_END.finditer(text):
        yield _Sentence(position, text[position : cut.start()])
        position = cut.end()
    yield _Sentence(position, text[position:])


def _normal(name: str) -> str:
    return name.strip("`'\"").lower()


def foreign_references(sentence: str, own: Collection[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of tools or servers in a sentence that are not the server's own names.

    `own` are the server's tool and parameter names, lower-cased. Generic
    mentions of other tools ("any other server's tool") count with the name
    as written, and so does an activity no tool or parameter of the server
    is named for ("sending emails" on a server without a mail tool).
    """
    found = []
    for match in _NAMED_TOOL.finditer(sentence):
        name = match.group("q") or match.group("i") or match.group("w")
        if name is None or _normal(name) in own or _normal(name) in _NOT_NAMES:
            continue
        if match.group("w") is None and not in_tool_role(sentence, match.start(), match.end()):
            continue  # a value, a field or an example ("if has_more is true"), not a tool
        if match.group("w") is not None and _normal(name) in {"tool", "tools", "server", "servers"}:
            continue
        if match.group("q") is not None and not re.fullmatch(_IDENT, name):
            # A quoted plain word counts only when called a tool or server right after it.
            tail = sentence[match.end() : match.end() + 20]
            if not re.match(r"\s+(?:mcp\s+)?(?:tool|server)", tail, _F):
                continue
        # As written, so "the calendar server" reads as a server and "ticket tool" as a tool.
        found.append((match.start(), match.end(), name if match.group("w") is None else match.group(0)))
    found += [(m.start(), m.end(), m.group(0)) for m in _GENERIC_OTHER.finditer(sentence)]
    for match in _ACTIVITY.finditer(sentence):
        noun = re.sub(r"\W", "", match.group("noun").lower())
        stems = next(stems for key, stems in _ACTIVITY_STEMS.items() if noun.startswith(key))
        if not any(stem in name for name in own for stem in stems):
            found.append((match.start(), match.end(), match.group(0)))
    return sorted(found)


def scan_attacks(
    tool: str, text: str, own_names: Collection[str] = (), location: str = "description"
) -> list[SecurityFinding]:
    """TEF-S007 … TEF-S010 findings in one text an agent reads, ordered by position.

    own_names: the server's tool names (and parameter and output field names); a reference to
    any of them, or to `tool` itself, is not a reference to another tool.
    """
    own = {name.lower() for name in (*own_names, tool)}
    findings: list[SecurityFinding] = []

    def add(rule_id: str, severity: str, start: int, end: int, message: str) -> None:
        findings.append(
            SecurityFinding.in_text(
                tool, text, start, end, rule_id=rule_id, severity=severity, location=location, message=message
            )
        )

    for sentence in _sentences(text):
        others = foreign_references(sentence.text, own)
        hijack = _hijack(sentence.text, others)
        # Preferring this tool to another is advice; forbidding or running down another tool is an attack.
        hijack_severity = "warning" if hijack and hijack[2].startswith(_PREFERENCE) else "error"
        addressed = None if _own_workflow(sentence.text, own) else _addressed(sentence.text)
        for rule_id, severity, found in (
            ("TEF-S007", "error", _shadowing(sentence.text, others) or _side_effect(sentence.text, others)),
            ("TEF-S008", "error", _exfiltration(sentence.text)),
            ("TEF-S009", hijack_severity, hijack),
            ("TEF-S010", "warning", addressed),
        ):
            if found is not None:
                begin, end, message = found
                add(rule_id, severity, sentence.start + begin, sentence.start + end, message)
    return sorted(findings, key=lambda f: (f.start, f.rule_id))


# Each check below looks at one sentence and returns (start, end, why) within it, or None.
Hit = tuple[int, int, str]

# What another tool's calls are made to do on the side: copied, forwarded or routed somewhere.
_SIDE_EFFECT = re.compile(
    r"\b(?:(?:also\s+)?go(?:es)?\s+(?:in\s+)?(?:copy|cc|bcc)\b"
    r"|(?:are|is|get|gets|be|been)\s+(?:also\s+|always\s+|first\s+)?(?:copied|cc'?e?d|bcc'?e?d|forwarded|routed|"
    r"re-?routed|redirected|diverted|mirrored|sent|paid|transferred)\b"
    r"|(?:also\s+)?(?:copy|cc|bcc|forward|route|redirect|divert)\b)",
    _F,
)
_SIDE_DESTINATION = re.compile(rf"{_EMAIL}|{_URL}|\bto\s+(?:the\s+)?[`'\"]?(?:{_IDENT})[`'\"]?", _F)


def _side_effect(words: str, others: list[tuple[int, int, str]]) -> Hit | None:
    """Another tool's calls made to copy, forward or route something elsewhere: "messages sent with
    send_email also go in copy to archive@…", "payments made with the stripe tool are routed to acct_…"."""
    if not others:
        return None
    for effect in _SIDE_EFFECT.finditer(words):
        destination = _OUTSIDE.search(words, effect.end()) or _SIDE_DESTINATION.search(words, effect.end())
        if destination is None:
            continue
        start, end, name = others[0]
        return (
            min(start, effect.start()),
            max(end, destination.end()),
            f"makes '{name}', which is not this server's, also send what it handles to "
            f"{destination.group(0).strip()!r}: a description may say what its own tool does, not add side "
            "effects to other servers' tools",
        )
    return None


def _shadowing(words: str, others: list[tuple[int, int, str]]) -> Hit | None:
    """Another tool named inside a condition ("when X is used", "for every X"), plus an order."""
    trigger = _TRIGGER.search(words)
    # An order about this tool ("use this tool when …") does not change another tool.
    directive = next((d for d in _DIRECTIVE.finditer(words) if not _SELF_OBJECT.match(words, d.end())), None)
    if trigger is None or directive is None:
        return None
    conditioned = [ref for ref in others if ref[0] >= trigger.start()]
    if not conditioned:
        return None
    start, end, name = conditioned[0]
    return (
        min(start, trigger.start(), directive.start()),
        max(end, directive.end()),
        f"changes how the agent uses '{name}', which is not this server's: "
        "a description may say what its own tool does, not how other servers' tools are used",
    )


def _exfiltration(words: str) -> Hit | None:
    """Send, then what the agent holds, then where to; in the passive ("emails must be copied to …")
    what is sent may come first."""
    passive = _SENT.search(words)
    send = passive or _SEND.search(words)
    if send is None or _NEGATION_BEFORE.search(words, 0, send.start()):
        return None  # "do not include the conversation in …" forbids what it names
    held = _HELD.search(words, send.end()) or (_HELD.search(words) if passive else None)
    destination = _OUTSIDE.search(words, send.end()) or _TO_TOOL.search(words, send.end())
    if destination is None:
        held = _HELD_SENSITIVE.search(words, send.end())
        destination = _TO_PARAMETER.search(words, send.end())
    if held is None or destination is None:
        return None
    return (
        min(send.start(), held.start()),
        max(held.end(), destination.end()),
        f"asks the agent to send {held.group(0)!r} to {destination.group(0).strip()!r}: "
        "what the agent holds leaves through a channel its user did not choose",
    )


def _governs(words: str, verb_end: int, ref_start: int) -> bool:
    """Whether a reference is the object of the words before it: close by, in the same clause."""
    between = words[verb_end:ref_start]
    return ref_start >= verb_end and len(between) <= 40 and not re.search(r"[;:,]|\b(?:and|but)\b", between)


def _hijack(words: str, others: list[tuple[int, int, str]]) -> Hit | None:
    """Another tool as the object of "never use" / "instead of", or run down so this one is used."""
    negated = _NEGATED_USE.search(words)
    if negated and _SELF_OBJECT.match(words, negated.end()):
        negated = None  # "do not use this tool for …" steers away from this tool, not toward it
    prefer = _PREFER_THIS.search(words)
    this = _THIS.search(words)
    worse = _WORSE.search(words)
    for start, end, name in others:
        if negated and _governs(words, negated.end(), start):
            return negated.start(), end, f"tells the agent never to use '{name}'" + _NOT_OURS
        if prefer and this and _governs(words, prefer.end(), start):
            begin = min(this.start(), prefer.start())
            return (
                begin,
                max(end, this.end()),
                f"{_PREFERENCE} '{name}'" + _NOT_OURS,
            )
        if worse and this and worse.start() >= end:
            return (
                start,
                max(worse.end(), this.end()),
                f"disparages '{name}' to steer the agent here" + _NOT_OURS,
            )
    return None


_PREFERENCE = "tells the agent to use this tool instead of"
_CALL_FIRST = re.compile(r"\b(?:call|use|invoke|run)\b", _F)


def _own_workflow(words: str, own: Collection[str]) -> bool:
    """Whether a sentence orders the agent to call one of the server's own tools, by name or title
    ("You must call 'Resolve Context7 Library ID' first"): the server's workflow, not the conversation."""
    lowered = words.lower()
    return bool(_CALL_FIRST.search(words)) and any(
        len(name) > 3 and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", lowered) for name in own
    )


def _addressed(words: str) -> Hit | None:
    speak = _SPEAK.search(words)
    # Whom or what the order is about: after the modal first ("the assistant must end each reply").
    about = (_CONVERSATION.search(words, speak.end()) or _CONVERSATION.search(words)) if speak else None
    control = _CONTROL.search(words)
    if speak and about:
        begin, end = min(speak.start(), about.start()), max(speak.end(), about.end())
    elif control:
        begin, end = control.start(), control.end()
    else:
        return None
    return begin, end, "gives the assistant orders about its conversation instead of describing the tool"
