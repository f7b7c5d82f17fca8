"""Defect classes: what kind of server-side fix a group of failures needs.

Call records never keep raw error text, so a class is decided from the error
codes a group's failing calls carried (`err_codes`). A code is what the
server reported (a JSON-RPC code such as `-32602`, an HTTP status such as
`404`, an errno name, or a symbolic code whose words say it, such as
`RATE_LIMIT_TIMEOUT`) or, when it reported none, the symbolic code
``code_for_message`` read from the error text at capture time, before the
text was dropped: `exception`, `validation`, `timeout`, `not_found`,
`permission`. Calls that got no answer carry `server_crash` (an unhandled
exception: the process died) or `no_response` (a timeout: the caller waited
and got nothing).

When a group's codes point at several classes, the one that comes first in
``PRECEDENCE`` wins: a crash hides whatever validation the tool would have
done, and a timeout says more about the server than a not-found it may also
return. `false_success` is never derived from codes: it is the class of
groups built from successful calls annotated as false successes. A group
whose codes match nothing is `other`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcpipechekr.artifacts.findings import DefectClass, Severity

PRECEDENCE: tuple[DefectClass, ...] = (
    "false_success",
    "unhandled_exception",
    "timeout",
    "permission",
    "not_found",
    "validation_error",
    "other",
)
"""Order in which classes win when a group's codes point at several."""

HINTS: dict[DefectClass, str] = {
    "unhandled_exception": "Catch the exception in the tool and return an error result that says what "
    "went wrong and how to call the tool instead.",
    "validation_error": "Validate the arguments up front and name the field, the rule and a valid "
    "example in the error; make the input schema state the same rule.",
    "timeout": "Bound the work (limits, paging, an index) or report progress, and answer with a "
    "retryable error before the client gives up.",
    "not_found": "Say what was looked up and how to find valid identifiers (which tool lists them) "
    "instead of a bare not-found.",
    "permission": "Report the missing permission and how to obtain it; do not advertise tools the "
    "caller can never use.",
    "false_success": "Return an error (isError) when the operation did not do what was asked, "
    "instead of a success with an empty or wrong result.",
    "efficiency": "Let one call do the job: add the filter, sort or batch parameter agents lack.",
    "correctness": "Fix the result the tool returns; it disagrees with the reference answer.",
    "feature_gap": "Add the capability agents reached for and could not find.",
    "other": "Return errors that say what failed and what the caller should do next.",
}
"""One line per class: the server-side fix that class usually needs."""

BASE_SEVERITY: dict[DefectClass, Severity] = {
    "unhandled_exception": "high",
    "timeout": "high",
    "false_success": "high",
    "permission": "medium",
    "not_found": "medium",
    "validation_error": "medium",
    "efficiency": "medium",
    "correctness": "high",
    "feature_gap": "medium",
    "other": "low",
}
"""Severity before the rate and the blast radius raise it (see ``severity_for``)."""

SEVERITY_ORDER: tuple[Severity, ...] = ("low", "medium", "high", "critical")

_EXACT_CODES: dict[str, DefectClass] = {
    # JSON-RPC
    "-32603": "unhandled_exception",
    "-32602": "validation_error",
    "-32600": "validation_error",
    "-32700": "validation_error",
    "-32601": "not_found",
    "-32002": "not_found",  # MCP: resource not found
    "-32001": "timeout",  # request timed out (SDK convention)
    # HTTP
    "400": "validation_error",
    "422": "validation_error",
    "401": "permission",
    "403": "permission",
    "404": "not_found",
    "410": "not_found",
    "408": "timeout",
    "504": "timeout",
    "500": "unhandled_exception",
    # errno names
    "enoent": "not_found",
    "eacces": "permission",
    "eperm": "permission",
    "etimedout": "timeout",
    # calls that got no answer (see tracker.UNANSWERED)
    "server_crash": "unhandled_exception",
    "no_response": "timeout",
}

_WORD_RULES: tuple[tuple[re.Pattern[str], DefectClass], ...] = (
    (re.compile(r"exception|internal|crash|traceback|panic|unexpected|unhandled"), "unhandled_exception"),
    (re.compile(r"time[ _-]?out|timed[ _-]?out|deadline"), "timeout"),
    (re.compile(r"permission|forbidden|unauthori[sz]ed|denied|access"), "permission"),
    (re.compile(r"not[ _-]?found|no[ _-]?such|unknown|missing[ _-]?resource"), "not_found"),
    (re.compile(r"valid|schema|argument|param|bad[ _-]?request|type[ _-]?error"), "validation_error"),
)


def class_of_code(code: str | None) -> DefectClass | None:
    """The class one error code points at, or None when it says nothing about the defect."""
    if code is None:
        return None
    key = code.strip().lower()
    if not key:
        return None
    if key in _EXACT_CODES:
        return _EXACT_CODES[key]
    for pattern, defect in _WORD_RULES:
        if pattern.search(key):
            return defect
    return None


def classify(err_codes: Iterable[str | None], *, false_success: bool = False) -> DefectClass:
    """The class of a group from every distinct code its failing calls carried, by ``PRECEDENCE``."""
    if false_success:
        return "false_success"
    found = {defect for code in err_codes if (defect := class_of_code(code)) is not None}
    for defect in PRECEDENCE:
        if defect in found:
            return defect
    return "other"


_MESSAGE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("exception", re.compile(r"^error executing tool \S+$", re.IGNORECASE)),
    ("validation", re.compile(r"validation|invalid|malformed|is required|missing required|must be", re.I)),
    ("timeout", re.compile(r"timed? ?out|timeout|deadline exceeded", re.IGNORECASE)),
    (
        "not_found",
        re.compile(r"not found|no such|does not exist|unknown (?:tool|resource|id)|notfound", re.I),
    ),
    (
        "permission",
        re.compile(r"permission|forbidden|unauthori[sz]ed|access denied|not (?:allowed|permitted)", re.I),
    ),
    (
        "exception",
        re.compile(
            r"traceback \(most recent call last\)|internal (?:server )?error|exception|unexpected error", re.I
        ),
    ),
)
"""Checked in order; the first match names the code (a validation failure that mentions an exception
is a validation failure). The MCP Python SDK reports a crash in a tool as the bare
`Error executing tool NAME`, hence the first rule."""


def code_for_message(message: str) -> str | None:
    """A symbolic error code for an error text that came without one, or None.

    For capture: an MCP tool error (`isError: true`) usually has only text,
    which is never stored. Deriving the code while the text is at hand keeps
    the one fact about it that classification needs.
    """
    text = message.strip()
    spaced = text.replace("_", " ")  # NOT_FOUND, permission_denied
    for code, pattern in _MESSAGE_RULES:
        if pattern.search(text) or pattern.search(spaced):
            return code
    return None


def severity_for(defect: DefectClass, *, rate_low: float, blast_radius: int) -> Severity:
    """The class's base severity, one step up when the failure is common or widespread.

    Common: the Wilson lower bound of the failure rate is at least 0.5.
    Widespread: the same error appears in three or more tools. A finding
    without a probe is capped at medium by ``cap_without_probe``.
    """
    level = SEVERITY_ORDER.index(BASE_SEVERITY[defect])
    if rate_low >= 0.5 or blast_radius >= 3:
        level += 1
    return SEVERITY_ORDER[min(level, len(SEVERITY_ORDER) - 1)]


def cap_without_probe(severity: Severity, probe: bool) -> Severity:
    """Severity as reported: at most medium when no probe can verify a fix."""
    if probe or SEVERITY_ORDER.index(severity) <= SEVERITY_ORDER.index("medium"):
        return severity
    return "medium"
