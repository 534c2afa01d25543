"""Retrieval selection policies and schedules."""
import random
from collections import Counter

import pytest

from evokernel.memory.retrieval import (DEFAULT_EPSILON, DEFAULT_LAMBDA, Candidate, LinearSchedule, pool_size,
                                        select)

POOL = [Candidate(f"m{i}", similarity=1 - i / 10, q=q) for i, q in enumerate([0.1, -0.5, 0.9, 0.9, 0.0, 0.4])]


def ids(cs):
    return [c.item_id for c in cs]


def test_value_policy_greedy_picks_highest_q_ties_by_similarity():
    assert ids(select(POOL, 3, "value", epsilon=0.0)) == ["m2", "m3", "m5"]


def test_similarity_random_none():
    assert ids(select(POOL, 2, "similarity")) == ["m0", "m1"]
    picked = select(POOL, 4, "random", rng=random.Random(0))
    assert len(set(ids(picked))) == 4 and set(ids(picked)) <= set(ids(POOL))
    assert select(POOL, 3, "none") == []
    with pytest.raises(ValueError):
        select(POOL, 3, "best")


def test_epsilon_explores_and_results_stay_distinct():
    counts = Counter()
    rng = random.Random(1)
    for _ in range(2000):
        picked = select(POOL, 2, "value", epsilon=0.5, rng=rng)
        assert len(set(ids(picked))) == 2
        counts.update(ids(picked))
    assert counts["m1"] > 0  # the worst item is still explored sometimes
    assert counts["m2"] > counts["m1"] * 3  # but the best is chosen far more often


def test_sizes_and_determinism():
    assert select(POOL, 10, "value", epsilon=0.0) and len(select(POOL, 10, "value")) == len(POOL)
    assert select([], 3, "value") == []
    dup = POOL + [Candidate("m2", 0.0, -1.0)]
    assert len(select(dup, 10, "similarity")) == len(POOL)
    a = select(POOL, 3, "value", 0.3, random.Random(7))
    b = select(POOL, 3, "value", 0.3, random.Random(7))
    assert a == b


def test_schedules_and_pool_size():
    s = LinearSchedule(2, 30, 20)
    assert (s(0), s(10), s(20), s(100)) == (2, 16, 30, 30)
    assert DEFAULT_LAMBDA(0) == 2 and DEFAULT_LAMBDA(50) == 30
    assert DEFAULT_EPSILON(0) == 0.3 and DEFAULT_EPSILON(50) == 0.05
    assert pool_size(5, 2) == 10 and pool_size(5, 2.1) == 11 and pool_size(0, 30) == 0
    with pytest.raises(ValueError):
        pool_size(5, 0.5)
