"""Values (Eq. 4-6): rewards, the r2 normaliser's safeguards, bounded updates, the ledger."""
import json
import math
import random

import pytest

from evokernel.memory.values import (DRAFT, REFINE, ItemValue, RewardNormalizer, ValueLedger, drafting_reward,
                                     refining_reward)


def test_rewards():
    assert drafting_reward(True) == 1.0 and drafting_reward(False) == -1.0
    assert refining_reward(False, 1.0, 2.0) == -1.0
    assert refining_reward(True, None, 2.0) == -1.0
    assert refining_reward(True, 1.0, 2.0) == pytest.approx(math.tanh(math.log(2.0)))  # 2x faster: +0.6
    assert refining_reward(True, 4.0, 2.0) == pytest.approx(-math.tanh(math.log(2.0)))
    assert refining_reward(True, 2.0, 2.0) == 0.0
    assert -1 < refining_reward(True, 1e-9, 1e9) <= 1
    with pytest.raises(ValueError):
        refining_reward(True, 1.0, 0.0)


def test_update_rule():
    v = ItemValue()
    assert v.update(DRAFT, 1.0, 0.1) == (0.0, pytest.approx(0.1))
    assert v.update(DRAFT, -1.0, 0.5) == (pytest.approx(0.1), pytest.approx(-0.45))
    assert (v.n1, v.last_r1, v.n2, v.q2) == (2, -1.0, 0, 0.0)  # stages are independent
    with pytest.raises(ValueError):
        v.update(DRAFT, 1.0, 0.0)
    with pytest.raises(ValueError):
        v.update("other", 1.0, 0.1)


def test_normalizer_warmup_floor_clip():
    n = RewardNormalizer(warmup=5, sigma_floor=0.1, clip=3.0)
    # warm-up: the first five pass through raw
    assert [n.normalize(r) for r in (0.5, -0.2, 0.1, 0.3, 0.0)] == [0.5, -0.2, 0.1, 0.3, 0.0]
    # then z-scored
    z = n.normalize(0.9)
    assert z == pytest.approx((0.9 - n.mean) / n.sigma)
    # floor: identical rewards do not blow up tiny differences
    flat = RewardNormalizer()
    for _ in range(20):
        flat.normalize(0.2)
    assert flat.sigma == 0.1 and abs(flat.normalize(0.21)) < 0.2
    # clip: an outlier cannot push Q arbitrarily far
    assert flat.normalize(1.0) == 3.0 and flat.normalize(-1.0) == -3.0
    with pytest.raises(ValueError):
        flat.normalize(float("nan"))


@pytest.mark.parametrize("seed", range(5))
def test_values_stay_bounded(tmp_path, seed):
    rng = random.Random(seed)
    ledger = ValueLedger(tmp_path / "values.jsonl", alpha=rng.uniform(0.05, 1.0))
    best = 10.0
    for k in range(400):
        items = [f"m{rng.randrange(12)}" for _ in range(rng.randrange(1, 6))]
        if rng.random() < 0.4:
            ledger.record(f"a{k}", DRAFT, drafting_reward(rng.random() < 0.5), items)
        else:
            lat = best * math.exp(rng.gauss(0, 3))  # wild latencies, including huge speedups
            r = refining_reward(rng.random() < 0.7, lat, best)
            best = min(best, lat)
            ledger.record(f"a{k}", REFINE, r, items)
    for v in ledger.state.items.values():
        assert -1.0 <= v.q1 <= 1.0
        assert -3.0 <= v.q2 <= 3.0


def test_ledger_logs_every_update_and_never_applies_twice(tmp_path):
    path = tmp_path / "values.jsonl"
    ledger = ValueLedger(path, alpha=0.5)
    e = ledger.record("t1/0", DRAFT, 1.0, ["api:relu", "exp:3", "api:relu"], task="relu", iteration=0)
    assert [u["item"] for u in e["updates"]] == ["api:relu", "exp:3"]  # each item once
    assert e["updates"][0] == {"item": "api:relu", "q_before": 0.0, "q_after": 0.5}
    assert ledger.record("t1/0", DRAFT, 1.0, ["api:relu"]) is None  # a resumed run re-submits: no-op
    for k in range(8):
        ledger.record(f"t1/{k + 1}", REFINE, 0.1 * k - 0.3, ["trace:a", "bp:omp"], task="relu", iteration=k + 1)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 9
    assert {"attempt_id", "task", "iteration", "stage", "r", "r_hat", "updates"} <= set(lines[-1])
    assert {"item", "q_before", "q_after"} == set(lines[-1]["updates"][0])
    # a fresh process folds the ledger into exactly the same values and normaliser state
    again = ValueLedger(path, alpha=0.5)
    assert again.values() == ledger.values()
    assert (again.state.normalizer.n, again.state.normalizer.mean) == (ledger.state.normalizer.n,
                                                                       ledger.state.normalizer.mean)
    assert again.record("t1/3", REFINE, 1.0, ["trace:a"]) is None


def test_torn_last_line_is_discarded_and_redone(tmp_path):
    path = tmp_path / "values.jsonl"
    ledger = ValueLedger(path)
    ledger.record("a0", DRAFT, 1.0, ["m"])
    with path.open("a") as f:
        f.write('{"attempt_id": "a1", "stage": "draft", "r": 1.0, "r_h')  # killed mid-write
    resumed = ValueLedger(path)
    assert resumed.torn_lines == 1 and not resumed.applied("a1")
    assert resumed.record("a1", DRAFT, 1.0, ["m"]) is not None
    assert ValueLedger(path).values()["m"]["n1"] == 2
    assert all(json.loads(line) for line in path.read_text().splitlines())
