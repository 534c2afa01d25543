from pathlib import Path

from evokernel.memory.retrieval import pool_size
from evokernel.nodes.retrieve import forward_ops, retrieve, task_key
from evokernel.tasks.load import load_task

SUITE = Path(__file__).resolve().parents[2] / "evokernel" / "suites"
RELU = SUITE / "cpu_l1" / "01_relu.py"


def test_task_key_names_the_operator_without_running_it():
    assert forward_ops(load_task(RELU)) == ["relu"]
    key = task_key(load_task(SUITE / "cpu_l1" / "15_matmul.py"))
    assert key.startswith("matmul | matmul |") and "ops: matmul" in key


def test_draft_pool_has_experiences_and_traces_only_sized_by_lambda(env):
    env.store.ensure_seed("cpu")
    assert retrieve(env.state(RELU), env.runtime())["pool"] == []  # only seed knowledge so far
    env.store.add([env.trace(f"t{i}") for i in range(40)] + [env.trace("e0", kind="experience")]
                  + [env.trace("bp", kind="best_practice")])
    pool = retrieve(env.state(RELU), env.runtime())["pool"]
    assert len(pool) == pool_size(4, 2.0) == 8  # λ starts at 2
    assert "bp" not in {p["id"] for p in pool}
    assert all(-1 <= p["similarity"] <= 1 for p in pool)
    late = retrieve(env.state(RELU, iteration=20), env.runtime())["pool"]
    assert len(late) == 41  # λ=30 → K=120 > what exists of these kinds
    assert retrieve(env.state(RELU), env.runtime(policy="none"))["pool"] == []


def test_drafting_shows_no_failed_trace_but_its_experience_and_refining_sees_both(env):
    env.store.add([env.trace("bad", feasible=False), env.trace("good"),
                   env.trace("bad_exp", kind="experience", feasible=False)])
    ids = {p["id"] for p in retrieve(env.state(RELU), env.runtime())["pool"]}
    assert ids == {"good", "bad_exp"}
    env.store.add([env.trace("sp")])
    st = env.state(RELU, feasible=True, start_point="sp", start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    assert {"bad", "good", "bad_exp"} <= {p["id"] for p in retrieve(st, env.runtime())["pool"]}


def test_refine_pool_excludes_the_start_point_and_its_children(env):
    env.store.add([env.trace("sp"), env.trace("child", parent="sp", stage="refine"), env.trace("other"),
                   env.trace("bp", kind="best_practice")])
    st = env.state(RELU, feasible=True, start_point="sp", start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    ids = {p["id"] for p in retrieve(st, env.runtime())["pool"]}
    assert ids == {"other", "bp"}


def test_refine_pool_puts_bottleneck_matched_traces_first(env):
    """A start point whose profile says MTE2-bound pulls traces that were MTE2-bound ahead of more
    similar ones with another bottleneck; without a recorded bound the order is plain similarity."""
    env.store.add([env.trace("sp", bound="mte2")]
                  + [env.trace(f"vec{i}", bound="vector") for i in range(12)]
                  + [env.trace("mte_a", bound="mte2"), env.trace("mte_b", bound="mte2")])
    st = env.state(RELU, feasible=True, start_point="sp", start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    pool = retrieve(st, env.runtime())["pool"]
    assert len(pool) == pool_size(4, 2.0)
    assert {p["id"] for p in pool[:2]} == {"mte_a", "mte_b"} and all(p.get("bottleneck") == "mte2" for p in pool[:2])
    assert not any(p.get("bottleneck") for p in pool[2:])
    env.store.add([env.trace("sp2")])  # no bound recorded (cpu): similarity order only
    st2 = env.state(RELU, feasible=True, start_point="sp2", start_points=[{"id": "sp2", "latency_ms": 1.0, "iteration": 0}])
    assert not any(p.get("bottleneck") for p in retrieve(st2, env.runtime())["pool"])


def test_a_relevance_margin_keeps_only_hits_close_to_the_best():
    from evokernel.nodes.retrieve import relevant_only

    pool = [{"id": "avg_pool", "similarity": 0.78}, {"id": "conv", "similarity": 0.62},
            {"id": "add", "similarity": 0.46}]
    assert relevant_only(pool, 0.0) == pool  # off: the paper's top-K
    assert [p["id"] for p in relevant_only(pool, 0.1)] == ["avg_pool"]
    assert [p["id"] for p in relevant_only(pool, 0.2)] == ["avg_pool", "conv"]
    assert relevant_only([], 0.1) == []


def test_drafting_applies_the_margin_and_refining_does_not(env):
    env.store.add([env.trace(w) for w in ("relu", "gemm", "pooling", "softmax", "layer", "conv")])
    full = retrieve(env.state(RELU), env.runtime())["pool"]
    near = retrieve(env.state(RELU), env.runtime(relevance_margin=1e-9))["pool"]
    best = max(p["similarity"] for p in full)
    assert near and len(near) < len(full) and all(p["similarity"] >= best - 1e-9 for p in near)
    env.store.add([env.trace("sp")])
    st = env.state(RELU, feasible=True, start_point="sp", start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    assert len(retrieve(st, env.runtime(relevance_margin=1e-9))["pool"]) == len(retrieve(st, env.runtime())["pool"])


def test_refine_pool_leaves_out_the_experiences_of_the_start_point_and_its_children(env):
    """Refining shows the start point and its variants with their outcomes on their own path; their
    experiences, retrieved as context, would say it again in place of what other kernels teach."""
    env.store.add([env.trace("sp", experience="exp:sp"), env.trace("child", parent="sp", experience="exp:child"),
                   env.trace("other", experience="exp:other"),
                   env.trace("exp:sp", kind="experience", trace="sp"),
                   env.trace("exp:child", kind="experience", trace="child"),
                   env.trace("exp:other", kind="experience", trace="other")])
    st = env.state(RELU, feasible=True, start_point="sp", start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    assert {p["id"] for p in retrieve(st, env.runtime())["pool"]} == {"other", "exp:other"}


def test_drafting_after_a_failure_asks_the_memory_about_that_failure(env):
    from evokernel.memory.store import MemoryItem

    env.store.add([env.trace(f"e{i}", kind="experience") for i in range(12)] + [
        MemoryItem("exp:header", "experience",
                   "softmax | build failed: accumulate is not a member of std; include the numeric header",
                   "drafting softmax: std::accumulate without #include <numeric> -> failed at the compile gate",
                   {"backend": "cpu", "task": "cpu-l1/11_softmax", "feasible": False})])
    k = pool_size(4, 2.0)
    first = [p["id"] for p in retrieve(env.state(RELU), env.runtime())["pool"]]
    assert len(first) == k and "exp:header" not in first  # relu's own experiences are closer
    feedback = ("compile: error: 'accumulate' is not a member of 'std'\n  note: std::accumulate is defined in "
                "header <numeric>; did you forget to '#include <numeric>'?")
    after = [p["id"] for p in retrieve(env.state(RELU, last_feedback=feedback), env.runtime())["pool"]]
    assert len(after) == k and "exp:header" in after  # same pool size: the failure pulled it up
    # refining asks about the start point, not about a failure
    env.store.add([env.trace("sp")])
    st = env.state(RELU, feasible=True, start_point="sp", last_feedback=feedback,
                   start_points=[{"id": "sp", "latency_ms": 1.0, "iteration": 0}])
    assert "exp:header" not in [p["id"] for p in retrieve(st, env.runtime())["pool"]][:k]
