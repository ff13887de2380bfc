"""Summary statistics for benchmark samples, in the manner of Go's benchstat. Pure Python, no scipy.

* :func:`median`, :func:`quantile`.
* :func:`spread_pct` -- the "± x%" beside a median: benchstat v1's rule (min/max after dropping outliers), taken
  around the median.
* :func:`mann_whitney_u` -- two-sided Mann-Whitney U test (exact or normal approximation), the test benchstat
  uses to say whether two sets of samples differ.
* :func:`geomean` -- the geometric mean of a summary row.
* :func:`best_seconds` -- the least wall time of repeated calls (the floor scripts' statistic: on a shared
  machine the least disturbed run).
"""

from __future__ import annotations

import gc
import math
import time
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

__all__ = [
    "median",
    "quantile",
    "spread_pct",
    "SPREAD_METHOD",
    "mann_whitney_u",
    "geomean",
    "best_seconds",
    "SIGNIFICANCE_LEVEL",
]

SIGNIFICANCE_LEVEL = 0.05
"""p-values above this are reported as "no significant difference" (benchstat's default alpha)."""

SPREAD_METHOD = (
    "± = the larger distance from the median to the smallest or largest sample, as % of the median, "
    "after dropping outliers beyond 1.5 IQR from the quartiles (benchstat v1's rule)"
)

# Largest sample sizes for which the exact null distribution of U is computed (it costs O(n1^2 * n2) integer
# operations); beyond, and whenever values tie, the normal approximation is used.
_EXACT_MAX_N = 50


def _sorted_floats(values: Iterable[float]) -> List[float]:
    data = sorted(float(v) for v in values)
    if not data:
        raise ValueError("no samples")
    return data


def quantile(values: Iterable[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) with linear interpolation between order statistics (numpy's default)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be within [0, 1]")
    data = _sorted_floats(values)
    pos = q * (len(data) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Iterable[float]) -> float:
    """The median (mean of the two middle values for an even count)."""
    return quantile(values, 0.5)


def spread_pct(values: Iterable[float]) -> float:
    """benchstat's "± x%": how far the samples stray from the median, in percent of the median.

    Outliers (beyond 1.5 times the interquartile range outside the quartiles, Tukey's fences) are dropped first,
    as benchstat v1 did; the result is ``max(max - median, median - min) / median * 100`` over what remains.
    0 for a single sample or a zero median.
    """
    data = _sorted_floats(values)
    med = median(data)
    if len(data) < 2 or med == 0:
        return 0.0
    q1, q3 = quantile(data, 0.25), quantile(data, 0.75)
    fence = 1.5 * (q3 - q1)
    kept = [v for v in data if q1 - fence <= v <= q3 + fence] or data
    return max(kept[-1] - med, med - kept[0]) / abs(med) * 100.0


def _ranks(values: Sequence[float]) -> Tuple[List[float], List[int]]:
    """Average ranks (1-based) of values, and the sizes of the groups of tied values."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _u_distribution(n1: int, n2: int) -> List[int]:
    """How many of the C(n1+n2, n1) orderings give U = 0, 1, ..., n1*n2 (no ties).

    These are the coefficients of the Gaussian binomial coefficient [n1+n2 choose n1]_q
    = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i), built one factor at a time with exact integers.
    """
    size = n1 * n2 + 1
    coeffs = [0] * size
    coeffs[0] = 1
    for i in range(1, n1 + 1):
        # multiply by (1 - q^(n2+i)) ...
        shift = n2 + i
        for k in range(size - 1, shift - 1, -1):
            coeffs[k] -= coeffs[k - shift]
        # ... and divide by (1 - q^i): c[k] += c[k-i], ascending (the division is exact)
        for k in range(i, size):
            coeffs[k] += coeffs[k - i]
    return coeffs


def _normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_u(x: Sequence[float], y: Sequence[float], method: str = "auto") -> Tuple[float, float]:
    """Two-sided Mann-Whitney U test of whether x and y come from the same distribution.

    Returns ``(U, p)`` where U is the statistic of x (the number of pairs with x_i > y_j, ties counting half).
    ``method``: "exact" uses the exact null distribution (valid only without ties), "asymptotic" the normal
    approximation with tie correction and continuity correction, "auto" the exact one when there are no ties
    and both samples have at most 50 values. The results match ``scipy.stats.mannwhitneyu(x, y,
    alternative="two-sided", method=...)``.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    values = [float(v) for v in x] + [float(v) for v in y]
    ranks, ties = _ranks(values)
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2.0
    u2 = n1 * n2 - u1
    has_ties = any(t > 1 for t in ties)
    if method == "auto":
        method = "exact" if not has_ties and max(n1, n2) <= _EXACT_MAX_N else "asymptotic"
    u_big = max(u1, u2)
    if method == "exact":
        if has_ties:
            raise ValueError("the exact test needs samples without ties")
        dist = _u_distribution(min(n1, n2), max(n1, n2))
        total = sum(dist)
        tail = sum(dist[int(round(u_big)):])  # P(U >= u_big); the distribution is symmetric
        p = 2.0 * tail / total
    elif method == "asymptotic":
        n = n1 + n2
        tie_term = sum(t ** 3 - t for t in ties)
        variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
        if variance <= 0:
            return u1, 1.0  # every value equal: no evidence of a difference
        z = (u_big - n1 * n2 / 2.0 - 0.5) / math.sqrt(variance)
        p = 2.0 * _normal_sf(z)
    else:
        raise ValueError("method must be 'auto', 'exact' or 'asymptotic'")
    return u1, min(1.0, max(0.0, p))


def geomean(values: Iterable[float]) -> Optional[float]:
    """Geometric mean of the positive values (zeros and negatives are skipped); None when none is positive."""
    logs = [math.log(v) for v in values if v > 0]
    if not logs:
        return None
    return math.exp(math.fsum(logs) / len(logs))


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The least wall time, in seconds, of ``repeat`` calls of fn, each after a full garbage collection."""
    out = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out
