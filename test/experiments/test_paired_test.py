"""The bootstrapped-productions paper's paired t-test on steps: the numbers on a fixed input, the cases where it is undefined,
and the pairing of the two agents' held-out trials by instance."""
from __future__ import annotations

import math

import pytest

from task_learning.productions.experiment import PAPER_T_TEST_P, TrialResult, format_t_tests, steps_t_tests
from task_learning.productions.significance import PairedTest, paired_t_test


def test_numbers_on_a_fixed_input() -> None:
    a, b = [15, 16, 14, 18, 17], [14, 15, 15, 16, 15]
    test = paired_t_test(a, b)
    # by hand: differences 1, 1, -1, 2, 2; mean 1; sd sqrt(6/4); t = 1 / (sd / sqrt(5)); df 4
    sd = math.sqrt(sum((d - 1.0) ** 2 for d in (1, 1, -1, 2, 2)) / 4)
    assert test.n == 5 and test.mean_a == 16.0 and test.mean_b == 15.0 and test.mean_difference == 1.0
    assert test.t == pytest.approx(1.0 / (sd / math.sqrt(5)), abs=1e-12) == pytest.approx(1.825742, abs=1e-6)
    assert test.p == pytest.approx(0.141927, abs=1e-6)  # two-sided, Student's t with 4 degrees of freedom
    assert test.describe() == "t = 1.83, p = 0.142"
    assert PairedTest.from_dict(test.to_dict()).describe() == test.describe()
    swapped = paired_t_test(b, a)
    assert swapped.t == pytest.approx(-test.t) and swapped.p == pytest.approx(test.p)


def test_undefined_cases_say_why_instead_of_printing_a_number() -> None:
    same = paired_t_test([3, 4, 5], [3, 4, 5])
    assert same.t is None and same.p is None and "identical in every pair" in same.note
    shifted = paired_t_test([4, 5, 6], [3, 4, 5])
    assert shifted.p is None and "every pair differs by the same +1.00" in shifted.note
    assert paired_t_test([1], [2]).p is None and paired_t_test([], []).note == "no pairs"
    with pytest.raises(ValueError, match="differ in length"):
        paired_t_test([1, 2], [1])


def _trial(family: str, agent: str, instance: int, steps: int, units: int = 1) -> TrialResult:
    return TrialResult(family, agent, "FloorPlan6", f"task {instance}", units, units, "done", steps, 0, 0, 0,
                       instance=instance)


def test_trials_are_paired_by_instance_per_unit_and_printed_beside_the_papers_p() -> None:
    results = [_trial("find", "action-only", i, s) for i, s in enumerate([14, 15, 15, 16, 15])]
    results += [_trial("find", "bootstrapped", i, s) for i, s in reversed(list(enumerate([15, 16, 14, 18, 17])))]
    # clear: steps per object (5 objects an instance), as the table's
    results += [_trial("clear", "action-only", i, s, 5) for i, s in enumerate([25, 30, 35])]
    results += [_trial("clear", "bootstrapped", i, s, 5) for i, s in enumerate([40, 40, 50])]
    tests = steps_t_tests(results)
    assert tests["find"].p == pytest.approx(0.141927, abs=1e-6)  # the pairs above, whatever the order
    assert tests["clear"].n == 3 and tests["clear"].mean_a == pytest.approx(26 / 3)
    assert tests["clear"].mean_b == pytest.approx(6.0)
    text = format_t_tests(tests)
    assert f"(paper p = {PAPER_T_TEST_P['find']:.3f})" in text and "(paper p = 0.001)" in text
    assert PAPER_T_TEST_P == {"find": 0.446, "slice": 0.347, "clear": 0.001}
