"""Statistics over repetitions: agent runs are noisy, so a success rate comes with its uncertainty.

- Wilson score interval (95%, z = 1.96): unlike the normal approximation it
  stays inside [0, 1] and is sensible for 0 or n successes out of few runs.
- pass@k: the chance that at least one of k attempts succeeds, estimated
  without bias from n >= k runs with c successes: 1 - C(n-c, k) / C(n, k).
- pass^k: the chance that all k attempts succeed: C(c, k) / C(n, k), the
  reliability a user who runs the task k times actually experiences.
"""

from __future__ import annotations

from math import comb, sqrt

Z95 = 1.959963984540054


def wilson_interval(successes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """(low, high) of the Wilson score interval; (0, 1) with no runs."""
    if runs <= 0:
        return 0.0, 1.0
    p = successes / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == runs else min(1.0, centre + half)
    return low, high


def pass_at_k(runs: int, successes: int, k: int) -> float:
    """Unbiased pass@k from `runs` attempts with `successes`; k is capped at runs."""
    if runs <= 0:
        return 0.0
    k = min(k, runs)
    return 1.0 - comb(runs - successes, k) / comb(runs, k)


def pass_hat_k(runs: int, successes: int, k: int) -> float:
    """pass^k: all of k attempts succeed; k is capped at runs."""
    if runs <= 0:
        return 0.0
    k = min(k, runs)
    return comb(successes, k) / comb(runs, k)
