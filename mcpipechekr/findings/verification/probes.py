"""How many times `verify` repeats a case, so a flaky failure has a fair chance to show itself.

A finding that failed in 30% of calls can pass once by luck. A verification
run therefore repeats its case `n` times and is green only when every attempt
passes. `n` is the smallest number of attempts with at least a 95% chance of
observing the failure if it is still there, given the failure rate `p` the
finding was observed with:

    n = ceil( ln(1 - 0.95) / ln(1 - p) ),  then clamped to [3, cap]

At least 3 attempts, whatever the rate: one attempt cannot tell a fix from a
lucky call. The cap bounds the cost of very rare failures: 100 attempts for
degradation findings (the call errors, times out or returns less than it
should some of the time), 20 for error-honesty findings (the server reports
success for a call that failed: each attempt usually needs a deliberate bad
input, so they are fewer and each is more telling). At the cap the chance of
seeing a failure is below 95%; `verify` says so.
"""

from __future__ import annotations

import math
from typing import Literal

from mcpipechekr.artifacts.findings import DefectClass

ProbeKind = Literal["degradation", "error_honesty"]

CONFIDENCE = 0.95
MIN_ATTEMPTS = 3
CAPS: dict[ProbeKind, int] = {"degradation": 100, "error_honesty": 20}
ERROR_HONESTY_CLASSES: frozenset[DefectClass] = frozenset({"false_success"})


def probe_kind(defect_class: DefectClass) -> ProbeKind:
    """error_honesty for false successes, degradation for every other class."""
    return "error_honesty" if defect_class in ERROR_HONESTY_CLASSES else "degradation"


def attempts_for(rate: float | None, kind: ProbeKind) -> int:
    """Attempts for a 95% chance of seeing a failure that happens with probability `rate`.

    An unknown or zero rate gives the cap: nothing says how rare the failure is.
    """
    cap = CAPS[kind]
    if rate is None or not math.isfinite(rate) or rate <= 0.0:
        return cap
    if rate >= 1.0:
        return MIN_ATTEMPTS
    needed = math.ceil(math.log(1.0 - CONFIDENCE) / math.log(1.0 - rate))
    return max(MIN_ATTEMPTS, min(cap, needed))


def detection_chance(rate: float | None, attempts: int) -> float | None:
    """The chance that `attempts` calls show a failure of probability `rate` (None when unknown)."""
    if rate is None or not math.isfinite(rate) or rate <= 0.0:
        return None
    return 1.0 - (1.0 - min(rate, 1.0)) ** attempts
