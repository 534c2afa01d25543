from pathlib import Path

from evokernel.nodes.q_filter import api_names, q_filter

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


def _pool(*ids):
    return [{"id": i, "similarity": 1.0 - n / 10} for n, i in enumerate(ids)]


def test_value_policy_picks_the_highest_q_of_the_stage(env):
    env.store.add([env.trace(i) for i in "abcdef"])
    env.store.values.record("x1", "draft", 1.0, ["e", "f"])  # Q1(e) = Q1(f) = 0.1
    env.store.values.record("x2", "refine", 1.0, ["a"])  # a refining value does not help drafting
    rt = env.runtime(epsilon_start=0.0, epsilon_end=0.0, n_context=2)
    out = q_filter(env.state(RELU, pool=_pool(*"abcdef")), rt)
    assert out["context"] == ["e", "f"]
    st = env.state(RELU, pool=_pool(*"abcdef"), feasible=True)
    assert q_filter(st, rt)["context"][0] == "a"  # refining reads Q2


def test_similarity_and_none_policies(env):
    env.store.add([env.trace(i) for i in "abc"])
    env.store.values.record("x1", "draft", 1.0, ["c"])
    assert q_filter(env.state(RELU, pool=_pool(*"abc")), env.runtime(policy="similarity", n_context=2))["context"] == ["a", "b"]
    assert q_filter(env.state(RELU, pool=_pool(*"abc")), env.runtime(policy="none"))["context"] == []


def test_epsilon_explores_deterministically_per_attempt(env):
    env.store.add([env.trace(str(i)) for i in range(30)])
    rt = env.runtime(epsilon_start=1.0, epsilon_end=1.0, n_context=3)
    pool = _pool(*map(str, range(30)))
    a = q_filter(env.state(RELU, pool=pool, iteration=1), rt)["context"]
    b = q_filter(env.state(RELU, pool=pool, iteration=1), rt)["context"]
    c = q_filter(env.state(RELU, pool=pool, iteration=2), rt)["context"]
    assert a == b  # a resumed attempt makes the same choice
    assert a != ["0", "1", "2"] or c != ["0", "1", "2"]


def test_seed_knowledge_comes_by_its_own_path(env):
    env.store.ensure_seed("cpu")
    out = q_filter(env.state(RELU, pool=[]), env.runtime())
    items = env.store.get(out["knowledge"])
    assert items and all(i.kind == "seed" for i in items)
    assert any("load_cpp" in i.text for i in items)  # the candidate-format template
    assert "#pragma omp parallel" in api_names(["#pragma omp parallel for\nfor (int i=0;;)"])


def test_no_memory_keeps_only_the_candidate_format(env):
    # --seed-knowledge format (the eval's memory mode none): the one demonstration, no API or category notes
    env.store.ensure_seed("cpu")
    full = env.store.get(q_filter(env.state(RELU, pool=[]), env.runtime(policy="none"))["knowledge"])
    bare = env.store.get(q_filter(env.state(RELU, pool=[]), env.runtime(policy="none", seed_knowledge="format"))["knowledge"])
    assert len(full) > 1
    assert [i.id for i in bare] == [full[0].id] and "load_cpp" in bare[0].text
