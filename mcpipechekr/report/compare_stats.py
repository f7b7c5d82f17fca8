"""The two tests `mcpipechekr compare` decides with, exact and deterministic.

- Fisher's exact test on a 2×2 table (successes and failures of run A and run
  B), computed from the hypergeometric distribution with ``math.comb``: exact
  at the small counts agent runs have (ten repetitions, often fewer), where a
  chi-squared approximation is not. Two-sided p-values sum the probabilities
  of every table with the same margins that is no more likely than the one
  observed (the rule R's `fisher.test` and SciPy use), with the same relative
  tolerance of 1e-7 so that tables equal in theory are not split by rounding.
- A percentile bootstrap interval of the difference of two means (B − A):
  each side is resampled with replacement, ``resamples`` times, from a
  ``random.Random`` seeded with a string (hashed with SHA-512 by Python, so
  the same on every machine and under any PYTHONHASHSEED); the interval is
  the 2.5th and 97.5th percentiles of the resampled differences, linearly
  interpolated. It assumes nothing about the shape of call or token counts;
  its limit is that with few attempts it can only be as wide as the values
  seen, which is why the comparison asks for at least two attempts per side
  before it calls a difference significant.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from random import Random
from typing import Literal

Alternative = Literal["two-sided", "greater", "less"]

FISHER_TOLERANCE = 1 + 1e-7
"""Tables whose probability is within this factor of the observed one count as "as extreme"."""


def fisher_exact(a: int, b: int, c: int, d: int, alternative: Alternative = "two-sided") -> float:
    """p-value of Fisher's exact test for the table [[a, b], [c, d]].

    Rows are the two samples, columns success and failure. `greater` tests
    whether the odds ratio (a·d)/(b·c) is above 1 (the first row succeeds more),
    `less` whether it is below; `two-sided` either way.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"a 2×2 table holds counts ≥ 0, got {[[a, b], [c, d]]}")
    row1, col1, total = a + b, a + c, a + b + c + d
    low, high = max(0, col1 - (total - row1)), min(row1, col1)
    denominator = comb(total, col1)

    def probability(x: int) -> float:
        return comb(row1, x) * comb(total - row1, col1 - x) / denominator

    if alternative == "greater":
        p = sum(probability(x) for x in range(a, high + 1))
    elif alternative == "less":
        p = sum(probability(x) for x in range(low, a + 1))
    else:
        observed = probability(a)
        p = sum(q for q in (probability(x) for x in range(low, high + 1)) if q <= observed * FISHER_TOLERANCE)
    return min(1.0, p)


@dataclass(frozen=True)
class MeanDifference:
    """Mean of each side, their difference (B − A) and its bootstrap percentile interval."""

    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0: a difference at the interval's level."""
        return self.low > 0 or self.high < 0


def _percentile(ordered: list[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default `linear` method)."""
    position = (len(ordered) - 1) * fraction
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def bootstrap_mean_difference(
    values_a: list[float],
    values_b: list[float],
    *,
    seed: str,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> MeanDifference:
    """The difference of means (B − A) with its percentile bootstrap interval, the same on every run.

    Both sides must hold at least one value. When neither side varies, every
    resample gives the same difference, so the interval is that point and no
    resampling is done.
    """
    if not values_a or not values_b:
        raise ValueError("each side needs at least one value")
    mean_a = sum(values_a) / len(values_a)
    mean_b = sum(values_b) / len(values_b)
    difference = mean_b - mean_a
    if len(set(values_a)) == 1 and len(set(values_b)) == 1:
        return MeanDifference(mean_a, mean_b, difference, difference, difference)
    rng = Random(seed)
    n_a, n_b = len(values_a), len(values_b)
    differences = sorted(
        sum(rng.choices(values_b, k=n_b)) / n_b - sum(rng.choices(values_a, k=n_a)) / n_a
        for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    return MeanDifference(
        mean_a, mean_b, difference, _percentile(differences, tail), _percentile(differences, 1 - tail)
    )
