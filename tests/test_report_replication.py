"""A replication read against the report it replicates (:mod:`rp1.report.replication`): each claim
of the original is replicated, not replicated or reversed by the fresh seeds' verdict, and a
comparison the original did not decide is no claim."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rp1.report.replication import (
    MISSING,
    NO_CLAIM,
    NOT_REPLICATED,
    REPLICATED,
    REVERSED,
    reading,
    replication_readings,
    same_difference_p,
)

HOLDS = "holds"
HOLDS_BUT = "holds, but only because Greedy fell below its untrained policy"
INCONCLUSIVE = "inconclusive: differences from −2.35 to 11.75 are consistent with the data"


def claims(rows: list[tuple[str, str, str, str, float]]) -> pd.DataFrame:
    """A claims.csv frame of (id, task, metric, verdict, diff) rows at 10⁵ samples, small scale,
    each difference's standard error 10 (Welch's t = diff / 10)."""
    return pd.DataFrame(
        [
            {
                "claim": f"claim {id_}",
                "id": id_,
                "task": task,
                "scale": "small",
                "samples": 100_000,
                "metric": metric,
                "verdict": verdict,
                "diff": diff,
                "diff_low": diff - 1,
                "diff_high": diff + 1,
                "t": diff / 10,
                "p_holm": 0.01,
            }
            for id_, task, metric, verdict, diff in rows
        ]
    )


def test_each_claim_reads_as_the_plan_says():
    assert reading(HOLDS, HOLDS) == REPLICATED
    assert reading(HOLDS, HOLDS_BUT) == REPLICATED  # still RP1 ahead, significantly
    assert reading(HOLDS_BUT, HOLDS) == REPLICATED
    for other in (INCONCLUSIVE, "equivalent", "nothing learned by 100,000"):
        assert reading(HOLDS, other) == NOT_REPLICATED
    assert reading(HOLDS, "does not hold") == REVERSED
    for unclaimed in (INCONCLUSIVE, "equivalent", "does not hold"):
        assert reading(unclaimed, HOLDS) == NO_CLAIM
    assert reading(HOLDS, "") == reading("", HOLDS) == MISSING


def test_readings_pair_the_same_comparison_in_the_originals_order():
    original = claims(
        [
            ("rp1-vs-greedy", "hopper", "auc", HOLDS, 170.0),
            ("rp1-vs-greedy", "hopper", "paper_best", HOLDS, 160.0),
            ("rp1-vs-vr", "halfcheetah", "auc", INCONCLUSIVE, 40.0),
            ("rp1-vs-vr", "hopper", "auc", HOLDS, 90.0),
        ]
    )
    replication = claims(
        [  # another order, one comparison lost, one only here
            ("rp1-vs-vr", "hopper", "auc", "does not hold", -30.0),
            ("rp1-vs-vr", "halfcheetah", "auc", HOLDS, 50.0),
            ("rp1-vs-greedy", "hopper", "auc", INCONCLUSIVE, 10.0),
            ("rp1-vs-greedy", "swimmer", "auc", HOLDS, 5.0),
        ]
    )
    read = replication_readings(original, replication)
    assert list(zip(read["id"], read["task"], read["metric"], read["reading"], strict=True)) == [
        ("rp1-vs-greedy", "hopper", "auc", NOT_REPLICATED),
        ("rp1-vs-greedy", "hopper", "paper_best", MISSING),
        ("rp1-vs-vr", "halfcheetah", "auc", NO_CLAIM),
        ("rp1-vs-vr", "hopper", "auc", REVERSED),
        ("rp1-vs-greedy", "swimmer", "auc", MISSING),
    ]
    first = read.iloc[0]
    assert (first["diff"], first["diff_replication"]) == (170.0, 10.0)
    assert (
        first["verdict_replication"] == INCONCLUSIVE and read.iloc[1]["verdict_replication"] == ""
    )
    assert list(read["claim"]) == [f"claim {i}" for i in read["id"]]


def test_the_two_seed_ranges_difference_is_tested_as_two_blocks():
    assert same_difference_p(50.0, 5.0, 50.0, 2.0) == pytest.approx(
        1.0
    )  # one difference, whatever the errors
    assert same_difference_p(50.0, 5.0, -50.0, -5.0) < 1e-6  # 100 apart, standard error √200
    close, far = same_difference_p(50.0, 5.0, 40.0, 4.0), same_difference_p(50.0, 5.0, 20.0, 2.0)
    assert 0.05 < close < 1.0 and far < close
    assert same_difference_p(50.0, 5.0, 40.0, 4.0) == same_difference_p(40.0, 4.0, 50.0, 5.0)
    for t in (0.0, float("nan")):  # no standard error to read: no test
        assert math.isnan(same_difference_p(50.0, 5.0, 0.0, t))


def test_each_reading_carries_the_p_that_both_ranges_give_one_difference():
    original = claims([("rp1-vs-greedy", "hopper", "auc", HOLDS, 170.0)])
    replication = claims(
        [
            ("rp1-vs-greedy", "hopper", "auc", HOLDS, 170.0),
            ("rp1-vs-vr", "hopper", "auc", HOLDS, 90.0),
        ]
    )
    read = replication_readings(original, replication)
    assert read["same_p"].iloc[0] == pytest.approx(1.0)
    assert math.isnan(read["same_p"].iloc[1])  # the original lacks it
