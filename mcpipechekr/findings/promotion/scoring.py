"""The promotion score of a group of failures, and the threshold calibration.

    score = W · R · (1 + ln(1 + M)) · (1 + ln B)

- W: lower bound of the 95% Wilson interval of the failure rate (failing
  calls of the group over all captured calls of its server and tool). A rate
  seen on few calls gets a low bound, so three failures in three calls do not
  outrank thirty in sixty.
- R: recency, 2^(-age / 14 days), age from the group's last failure to the
  time of scoring: a failure not seen for two weeks counts half.
- M: median number of turns in the group's failure windows (calls the agent
  made after the failure until it recovered or the session ended); a failure
  that costs agents more turns counts more. 0 when the group has no windows.
- B: blast radius, the distinct tools of the server where the same error
  template appeared (at least 1).

The score is 0 without failures and grows without bound only through M and
B, logarithmically. A group is promoted when its score meets the threshold
and it was seen in at least two sessions (see `promote`).

The default threshold is calibrated on the synthetic corpus in
tests/fixtures/findings_corpus/, whose groups are labelled as real defects or
noise: ``calibrate_threshold`` picks the cut with the best F1 and the test
suite recomputes it, so a change of formula that moves it is caught.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from datetime import datetime

RECENCY_HALF_LIFE_DAYS = 14.0
DEFAULT_THRESHOLD = 0.04
"""Calibrated on tests/fixtures/findings_corpus/ (see ``calibrate_threshold``)."""

SCORE_DIGITS = 6
"""Scores are rounded so that a rebuilt index gives byte-identical findings."""


def wilson_low(failures: int, calls: int) -> float:
    """Lower bound of the 95% Wilson interval of failures/calls; 0 without calls."""
    if calls <= 0 or failures <= 0:
        return 0.0
    # Imported here: the evaluate package loads its analyzers on import, which the findings
    # commands do not need.
    from mcpipechekr.evaluate.stats import wilson_interval

    return wilson_interval(min(failures, calls), calls)[0]


def recency(last_seen: datetime, now: datetime) -> float:
    """2^(-age in days / 14); a last failure in the future (clock skew) counts as now."""
    age_days = max(0.0, (now - last_seen).total_seconds() / 86400.0)
    return 2.0 ** (-age_days / RECENCY_HALF_LIFE_DAYS)


def median_turns(turns: Iterable[int]) -> float:
    """Median turns of the failure windows; 0 when there are none."""
    values = list(turns)
    return float(statistics.median(values)) if values else 0.0


def score(
    *, failures: int, calls: int, last_seen: datetime, now: datetime, turns: Sequence[int], blast_radius: int
) -> float:
    """The promotion score of one group (formula in the module docstring)."""
    low = wilson_low(failures, calls)
    if low == 0.0:
        return 0.0
    value = (
        low
        * recency(last_seen, now)
        * (1.0 + math.log1p(median_turns(turns)))
        * (1.0 + math.log(max(1, blast_radius)))
    )
    return round(value, SCORE_DIGITS)


def calibrate_threshold(scored: Iterable[tuple[float, bool]]) -> float:
    """The threshold with the best F1 at telling labelled defects (True) from noise.

    Candidates are the midpoints between consecutive distinct scores (and 0).
    Ties go to the higher threshold: of equally good cuts, the one that
    promotes less. The result is written with as few significant digits as
    keep its F1 (at most six), the precision the default is written with.
    """
    pairs = sorted(scored)
    if not any(label for _, label in pairs):
        raise ValueError("calibration needs at least one labelled defect")
    distinct = sorted({value for value, _ in pairs})
    candidates = [0.0] + [(a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)]
    best_f1, best = -1.0, 0.0
    for threshold in candidates:
        f1 = f1_at(pairs, threshold)
        if f1 >= best_f1:
            best_f1, best = f1, threshold
    for digits in range(1, 7):
        short = float(f"{best:.{digits}g}")
        if f1_at(pairs, short) == best_f1:
            return short
    return round(best, SCORE_DIGITS)


def f1_at(scored: Iterable[tuple[float, bool]], threshold: float) -> float:
    """F1 of promoting every group scoring at least ``threshold``."""
    pairs = list(scored)
    positives = sum(1 for _, label in pairs if label)
    hits = sum(1 for value, label in pairs if label and value >= threshold)
    promoted = sum(1 for value, _ in pairs if value >= threshold)
    return 2 * hits / (promoted + positives) if promoted + positives else 0.0
