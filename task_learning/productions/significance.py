"""The paired-sample t-test for means, as the bootstrapped-productions paper compares the two agents' steps.

The bootstrapped-productions paper (Results): "We use paired sample t-test for means to compare the number of steps taken by
both agents" and prints only the p-values (find 0.446, slice 0.347, clear 0.001). The pairs are
the same task instance run by both agents. scipy's `ttest_rel` computes it (two-sided).

Where every pair differs by exactly the same amount the test is undefined (no spread of the
differences): all differences zero gives no evidence of a difference, and `p` is reported as None
with the reason, never as a number scipy would print from a division by zero.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class PairedTest:
    """A paired t-test of `a` against `b` (differences a - b) over `n` pairs."""

    n: int
    mean_a: float
    mean_b: float
    mean_difference: float
    t: float | None
    p: float | None
    note: str = ""  # why t and p are None, when they are

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean_a": round(self.mean_a, 4), "mean_b": round(self.mean_b, 4),
                "mean_difference": round(self.mean_difference, 4),
                "t": None if self.t is None else round(self.t, 4),
                "p": None if self.p is None else round(self.p, 4), "note": self.note}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PairedTest":
        """Back from `to_dict` (other keys, such as a paper's p beside it, are ignored)."""
        return cls(int(data["n"]), float(data["mean_a"]), float(data["mean_b"]), float(data["mean_difference"]),
                   data.get("t"), data.get("p"), str(data.get("note", "")))

    def describe(self) -> str:
        """"t = 2.31, p = 0.037" or the reason there is none."""
        if self.p is None:
            return self.note
        return f"t = {self.t:.2f}, p = {self.p:.3f}"


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> PairedTest:
    """Two-sided paired t-test of a against b (same length, pair i = a[i], b[i])."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return PairedTest(0, 0.0, 0.0, 0.0, None, None, "no pairs")
    diffs = [x - y for x, y in zip(a, b)]
    mean_a, mean_b, mean_d = sum(a) / n, sum(b) / n, sum(diffs) / n
    if n < 2:
        return PairedTest(n, mean_a, mean_b, mean_d, None, None, "one pair: no test")
    if all(math.isclose(d, diffs[0], abs_tol=1e-12) for d in diffs):
        why = ("identical in every pair: no difference, the test is undefined" if math.isclose(diffs[0], 0.0, abs_tol=1e-12)
               else f"every pair differs by the same {diffs[0]:+.2f}: no spread, the test is undefined")
        return PairedTest(n, mean_a, mean_b, mean_d, None, None, why)
    from scipy import stats

    result = stats.ttest_rel(list(a), list(b))
    return PairedTest(n, mean_a, mean_b, mean_d, float(result.statistic), float(result.pvalue))
