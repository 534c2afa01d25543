"""recall: the fastest earlier kernel of the same task (by source) is the first attempt, judged again."""
from pathlib import Path

from evokernel.nodes.generate import generate
from evokernel.nodes.recall import earlier_best
from evokernel.nodes.retrieve import retrieve
from evokernel.tasks.load import load_task

RELU = Path(__file__).resolve().parents[2] / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"


class Counting:
    name = "counting"

    def __init__(self):
        self.calls = 0

    def generate(self, request):
        from evokernel.generators.base import Generation

        self.calls += 1
        return Generation(source="# drafted", summary="drafted", model="counting")


def test_only_a_feasible_kernel_of_the_same_source_from_another_run_is_recalled(env):
    from evokernel.graph import resources

    task = load_task(RELU)
    other = load_task(RELU, {"dim": 1024})
    key = task.key
    env.store.add([
        env.trace("slow", task_key=key, run="r1", latency_ms=3.0),
        env.trace("fast", task_key=key, run="r1", latency_ms=1.0),
        env.trace("faster_but_failed", task_key=key, run="r1", latency_ms=0.5, feasible=False),
        env.trace("fastest_no_code", task_key=key, run="r1", latency_ms=0.4, code_kept=False),
        env.trace("other_sizes", task_key=other.key, run="r1", latency_ms=0.3),
        env.trace("other_backend", task_key=key, run="r1", latency_ms=0.2, backend="ascend-sim"),
        env.trace("this_run", task_key=key, run="t", latency_ms=0.1),
        env.trace("legacy_no_key", run="r0", latency_ms=0.05),
    ])
    assert earlier_best(env.store, task, "cpu", "t").id == "fast"
    assert earlier_best(env.store, other, "cpu", "t").id == "other_sizes"
    assert earlier_best(env.store, load_task(RELU, {"dim": 64}), "cpu", "t") is None

    gen = Counting()
    resources.install(generator=gen)
    st = env.state(RELU)
    assert resources.task(st["task"]).key == key
    assert retrieve(st, env.runtime())["pool"] == []
    cand = generate(st, env.runtime())["candidate"]
    assert cand["recalled_from"] == "fast" and cand["source"] == "// code of fast" and cand["model"] == "recall"
    assert gen.calls == 0
    # only the task's first attempt, only while nothing is feasible, only with recall on and a memory policy
    for later in (env.state(RELU, iteration=1), env.state(RELU, feasible=True)):
        assert retrieve(later, env.runtime())["pool"] != []
    for n, ctx in enumerate(({"recall": False}, {"policy": "none"}, {"method": "passk"}), 1):
        assert generate(st, env.runtime(**ctx))["candidate"]["source"] == "# drafted" and gen.calls == n
