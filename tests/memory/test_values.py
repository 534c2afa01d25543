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


# --- several processes sharing one ledger ------------------------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

from evokernel.memory.values import IMPORT  # noqa: E402

WRITER = textwrap.dedent("""
    import json, random, sys
    from evokernel.memory.values import DRAFT, REFINE, ValueLedger
    path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(name)
    ledger = ValueLedger(path, alpha=0.3)
    for k in range(n):
        items = [f"m{rng.randrange(6)}" for _ in range(3)]
        if k % 2:
            ledger.record(f"{name}/{k}", DRAFT, rng.choice([1.0, -1.0]), items, task=name, iteration=k)
        else:
            ledger.record(f"{name}/{k}", REFINE, rng.uniform(-1, 1), items, task=name, iteration=k)
    ledger.refresh()
    print(json.dumps({"values": ledger.values(), "norm": [ledger.state.normalizer.n, ledger.state.normalizer.mean],
                      "attempts": len(ledger.state.attempts)}))
""")


def _fold_check(path, alpha=0.3):
    """Replay the file line by line: every logged q_before is the value the fold gives at that line."""
    state: dict[str, dict[str, float]] = {}
    norm = RewardNormalizer()
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["stage"] == REFINE:
            assert e["r_hat"] == pytest.approx(norm.normalize(e["r"]))
        key = "q1" if e["stage"] == DRAFT else "q2"
        for u in e["updates"]:
            v = state.setdefault(u["item"], {"q1": 0.0, "q2": 0.0})
            assert u["q_before"] == pytest.approx(v[key])
            v[key] = v[key] + alpha * (e["r_hat"] - v[key])
            assert u["q_after"] == pytest.approx(v[key])
    return state


def test_two_processes_append_to_one_ledger(tmp_path):
    path = tmp_path / "values.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, "150"], stdout=subprocess.PIPE, text=True)
             for name in ("A", "B")]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 300 and len({e["attempt_id"] for e in lines}) == 300
    state = _fold_check(path)
    fresh = ValueLedger(path, alpha=0.3)
    assert len(fresh.state.attempts) == 300
    for item, v in state.items():
        assert fresh.values()[item]["q1"] == pytest.approx(v["q1"])
        assert fresh.values()[item]["q2"] == pytest.approx(v["q2"])
    # the writer that finished last folded the whole file: it holds exactly the fresh fold
    # (by attempts, not the normaliser's count: a last line of the other writer may be a draft, which leaves it)
    last = [o for o in outs if o["attempts"] == 300]
    assert last and all(o["values"] == fresh.values() for o in last)
    assert last[0]["norm"] == [fresh.state.normalizer.n, fresh.state.normalizer.mean]


def test_refresh_sees_other_writers_and_never_double_applies(tmp_path):
    path = tmp_path / "values.jsonl"
    a, b = ValueLedger(path, alpha=0.5), ValueLedger(path, alpha=0.5)
    a.record("x1", DRAFT, 1.0, ["m"])
    assert b.get("m") is None and b.refresh() == 1 and b.q("m", DRAFT) == 0.5
    # b records on top of a's update: q_before is a's result, not 0
    e = b.record("x2", DRAFT, 1.0, ["m"])
    assert e["updates"][0]["q_before"] == 0.5
    assert a.record("x2", DRAFT, 1.0, ["m"]) is None  # b already applied it: a catches up, then skips
    assert a.q("m", DRAFT) == b.q("m", DRAFT) == 0.75
    assert a.refresh() == 0


def test_torn_tail_from_a_dead_writer_is_cut_by_the_next_writer(tmp_path):
    path = tmp_path / "values.jsonl"
    a, b = ValueLedger(path), ValueLedger(path)
    a.record("a0", DRAFT, 1.0, ["m"])
    with path.open("a") as f:
        f.write('{"attempt_id": "dead", "stage": "dr')  # a writer killed mid-line
    b.record("b0", DRAFT, -1.0, ["m"])
    assert b.torn_lines == 1
    assert [json.loads(x)["attempt_id"] for x in path.read_text().splitlines()] == ["a0", "b0"]
    a.refresh()
    assert a.values() == b.values() == ValueLedger(path).values()


def test_import_entry_sets_values_once(tmp_path):
    path = tmp_path / "values.jsonl"
    ledger = ValueLedger(path)
    ledger.record("a0", DRAFT, 1.0, ["old"])
    e = ledger.set_values("import:f1", {"x": {"q1": 0.7, "q2": -0.4, "n1": 3, "n2": 2}, "old": {"q1": -0.2}})
    assert e["stage"] == IMPORT
    assert ledger.get("x").q1 == 0.7 and ledger.get("x").n2 == 2 and ledger.get("old").n1 == 1
    assert ledger.set_values("import:f1", {"x": {"q1": 0.0}}) is None
    ledger.record("a1", DRAFT, 1.0, ["x"])
    again = ValueLedger(path)
    assert again.values() == ledger.values()
    assert again.get("x").q1 == pytest.approx(0.7 + 0.1 * (1.0 - 0.7)) and again.get("x").n1 == 4
    with pytest.raises(ValueError):
        ledger.set_values("import:bad", {"x": {"q3": 1.0}})
    with pytest.raises(ValueError):
        ledger.set_values("import:bad", {"x": {"q1": float("nan")}})


# --- the fold fed bytes (ValueFold), reading lines by offset, bad input --------------------------

from evokernel.memory.values import ValueFold  # noqa: E402


def _ledger_with_history(path, n=60, seed=3):
    rng = random.Random(seed)
    ledger = ValueLedger(path, alpha=0.3)
    for k in range(n):
        items = [f"m{rng.randrange(5)}" for _ in range(3)]
        if k == 20:
            ledger.set_values("import:x", {"m1": {"q1": 0.5, "n1": 7}, "new": {"q2": -0.3}})
        elif k % 3:
            ledger.record(f"a{k}", REFINE, rng.uniform(-1, 1), items)
        else:
            ledger.record(f"a{k}", DRAFT, rng.choice([1.0, -1.0]), items)
    return ledger


@pytest.mark.parametrize("chunk", [1, 7, 64, 10_000])
def test_fold_fed_in_any_chunks_equals_the_fold_of_the_file(tmp_path, chunk):
    path = tmp_path / "values.jsonl"
    ledger = _ledger_with_history(path)
    data = path.read_bytes()
    fold, pending = ValueFold(), b""
    for i in range(0, len(data), chunk):
        _, bad, pending = fold.feed(pending + data[i:i + chunk])
        assert bad == 0
    assert pending == b"" and fold.offset == len(data)
    assert fold.values() == ledger.values() == ValueLedger(path).values()
    assert fold.state.attempts == ledger.state.attempts and len(fold.state.attempts) == 60
    assert (fold.state.normalizer.n, fold.state.normalizer.mean) == (ledger.state.normalizer.n,
                                                                     ledger.state.normalizer.mean)


def test_fold_feed_keeps_the_tail_and_skips_lines_that_are_not_entries():
    fold = ValueFold()
    line = json.dumps({"attempt_id": "a", "task": "", "iteration": 0, "stage": DRAFT, "r": 1.0, "r_hat": 1.0,
                       "alpha": 0.5, "updates": [{"item": "m", "q_before": 0.0, "q_after": 0.5}]}).encode()
    folded, bad, tail = fold.feed(line + b"\n" + b'{"not": "an entry"}\n' + line[:10])
    assert (folded, bad, tail) == (1, 1, line[:10]) and fold.offset == len(line) + 21
    assert fold.q("m", DRAFT) == 0.5 and fold.applied("a")


def test_lines_since_returns_complete_lines_from_an_offset_or_everything(tmp_path):
    path = tmp_path / "values.jsonl"
    ledger = _ledger_with_history(path, n=10)
    size = path.stat().st_size
    gen = ledger.generation
    first = path.read_bytes().index(b"\n") + 1
    assert ledger.lines_since(first, gen) == (gen, first, path.read_bytes()[first:])
    assert ledger.lines_since(size, gen) == (gen, size, b"")
    everything = (gen, 0, path.read_bytes())
    assert ledger.lines_since(first - 1, gen) == everything  # mid-line: not a position in this file
    assert ledger.lines_since(size + 5, gen) == everything  # past the end
    assert ledger.lines_since(first, gen + 1) == everything  # another version of the file
    with path.open("ab") as f:
        f.write(b'{"attempt_id": "torn", "sta')  # a writer died mid-line: never sent, cut off
    assert ledger.lines_since(size, gen) == (gen, size, b"") and path.stat().st_size == size
    with pytest.raises(ValueError):
        ledger.lines_since(-1, gen)
    assert ValueLedger(tmp_path / "none.jsonl").lines_since(0, None) == (None, 0, b"")


@pytest.mark.parametrize("bad", [
    dict(stage="other"), dict(reward=float("nan")), dict(reward="1"), dict(alpha=0.0), dict(alpha=1.5),
    dict(items="m1"), dict(items=["m", ""]), dict(items=[3]), dict(attempt_id=""),
])
def test_a_bad_update_is_refused_before_anything_is_written(tmp_path, bad):
    path = tmp_path / "values.jsonl"
    ledger = ValueLedger(path, alpha=0.5)
    ledger.record("a0", DRAFT, 1.0, ["m"])
    before = path.read_bytes()
    args = dict(attempt_id="a1", stage=DRAFT, reward=1.0, items=["m"], alpha=None) | bad
    with pytest.raises(ValueError):
        ledger.record(args.pop("attempt_id"), args.pop("stage"), args.pop("reward"), args.pop("items"), **args)
    assert path.read_bytes() == before and ledger.values() == ValueLedger(path).values()
    assert not ledger.applied("a1")
