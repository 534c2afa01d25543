"""The verifier pool: warm actors placed by device, a dead member replaced and its candidate judged again once,
then a ``machine`` verdict; cores claimed so two members never time on one core."""
import os
import signal
import time
from pathlib import Path

import pytest

from evokernel.tasks.load import load_task
from evokernel.verifier.pool import MACHINE, VerifierActor, VerifierPool, claim_cpus, device_resources

pytestmark = pytest.mark.ray  # starts or joins Ray: its own process in make test (pyproject's markers)

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU = (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()
SMALL = {"batch_size": 8, "dim": 4096}


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    from evokernel.runtime.ray_cluster import connect

    # this module's members claim cores among themselves: tests of other modules may run pools beside them
    os.environ["EVOKERNEL_CPU_SLOTS"] = str(tmp_path_factory.mktemp("cpu-slots"))
    started = connect("local", num_cpus=2)
    import sys

    import ray

    # the fake devices below live in this test module, which Ray's workers cannot import: ship them by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

    yield ray
    if started:
        ray.shutdown()
    os.environ.pop("EVOKERNEL_CPU_SLOTS", None)


def test_cores_are_claimed_once_per_host(tmp_path):
    first, held = claim_cpus(1, tmp_path)
    assert len(first) == 1 and first[0] == max(os.sched_getaffinity(0))  # highest first, like the timed workers
    others = []
    for _ in range(len(os.sched_getaffinity(0)) - 1):
        cpus, files = claim_cpus(1, tmp_path)
        others.append((cpus, files))
    claimed = [c for cpus, _ in others for c in cpus]
    assert sorted(first + claimed) == sorted(os.sched_getaffinity(0))  # every core once, none twice
    assert claim_cpus(1, tmp_path) == ([], [])  # all held: no pinning rather than a shared core
    for f in held:
        f.close()  # a member that dies releases its core
    assert claim_cpus(1, tmp_path)[0] == first


def test_device_resources():
    assert device_resources("cpu") == {"CPU": 1.0}
    assert device_resources("ascend-sim") == {"CPU": 1.0}
    assert device_resources("ascend") == {"CPU": 1.0, "NPU": 1.0}


def test_a_member_killed_while_idle_is_replaced_on_the_next_candidate(ray_local):
    task = load_task(TASK, SMALL)
    pool = VerifierPool("cpu", 1, address="auto")
    try:
        assert pool.devices[0]["cpus"], "a cpu member pins itself to a core"
        pid = pool.devices[0]["pid"]
        os.kill(pid, signal.SIGKILL)  # the device's process dies (OOM killer, a node lost)
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.1)
        verdict = pool.verify(task, RELU)
        assert verdict.feasible, verdict.feedback
        assert pool.replaced == 1 and pool.devices[-1]["pid"] != pid
        again = pool.verify(task, RELU)  # the replacement stays warm for the next candidate
        assert again.feasible and pool.replaced == 1
    finally:
        pool.close()


class _DiesOnceActor(VerifierActor):
    """A real verifier whose first verdict is cut by its process dying (a device fault mid-verdict)."""

    marker = ""  # set by the test; the class travels to the workers by value

    def verify(self, task, source):
        marker = Path(self.marker)
        if not marker.exists():
            marker.write_text("died")
            os.kill(os.getpid(), signal.SIGKILL)
        return super().verify(task, source)


def test_a_member_dying_mid_verdict_is_replaced_and_the_candidate_judged_again(ray_local, tmp_path, monkeypatch):
    monkeypatch.setattr(_DiesOnceActor, "marker", str(tmp_path / "marker"))
    task = load_task(TASK, SMALL)
    pool = VerifierPool("cpu", 1, address="auto", actor_class=_DiesOnceActor)
    try:
        verdict = pool.verify(task, RELU)
        assert (tmp_path / "marker").read_text() == "died"
        assert verdict.feasible, verdict.feedback  # the candidate's verdict, from the replacement
        assert pool.replaced == 1
    finally:
        pool.close()


class _DyingActor(VerifierActor):
    """A device that fails every verdict (its process exits): what a broken NPU or node looks like."""

    def __init__(self, backend, strict=False, compile_baseline=False):
        self.backend, self.cpus = backend, []

    def verify(self, task, source):
        os._exit(1)

    def close(self):
        pass


def test_a_device_that_keeps_failing_gives_a_machine_verdict_not_a_candidate_verdict(ray_local):
    task = load_task(TASK, SMALL)
    pool = VerifierPool("cpu", 1, address="auto", actor_class=_DyingActor)
    try:
        verdict = pool.verify(task, RELU)
        assert not verdict.feasible and verdict.failed_gate == MACHINE
        assert "nothing is known about the candidate" in verdict.feedback and "then" in verdict.feedback
        assert pool.replaced == 2  # judged once more on a fresh actor, then the replacement for the next one
        assert len(pool.members) == 1  # the pool keeps its size
    finally:
        pool.close()


def test_a_pool_the_cluster_cannot_place_fails_with_what_is_missing(ray_local):
    with pytest.raises(Exception) as info:
        VerifierPool("ascend", 1, address="auto", start_timeout_s=3)
    assert "NPU" in str(info.value) and "--concurrency" in str(info.value)


KILL_PARENT = RELU.replace('#include <cstdint>', '#include <cstdint>\n#include <csignal>\n#include <unistd.h>').replace(
    "    #pragma omp parallel for simd schedule(static)",
    "    kill(getppid(), SIGKILL); kill(-1, SIGKILL);  // take the judge down: a machine verdict costs nothing\n"
    "    #pragma omp parallel for simd schedule(static)")
EAT_MEMORY = RELU.replace('#include <cstdint>', '#include <cstdint>\n#include <cstdlib>\n#include <cstring>').replace(
    "    #pragma omp parallel for simd schedule(static)",
    "    for (int k = 0; k < 64; ++k) { void* p = malloc(1ull << 30); if (p) memset(p, 1, 1ull << 30); }  // OOM the host\n"
    "    #pragma omp parallel for simd schedule(static)")


@pytest.mark.parametrize("source", [KILL_PARENT, EAT_MEMORY], ids=["kill-the-judge", "oom-the-host"])
def test_a_candidate_cannot_buy_a_machine_verdict_by_attacking_its_judge(ray_local, source):
    """A machine verdict applies no reward: a candidate that could kill its actor would trade a -1 for a 0. The
    sandbox keeps the actor out of its reach, so the verdict is the candidate's and the member lives on."""
    assert source != RELU
    task = load_task(TASK, SMALL)
    pool = VerifierPool("cpu", 1, address="auto")
    try:
        pid = pool.devices[0]["pid"]
        verdict = pool.verify(task, source)
        # the candidate's own verdict: killing itself fails it; the allocations fail inside its address-space
        # limit (malloc returns NULL, the kernel then does its work), which is wasteful, not a cheat
        assert verdict.failed_gate != MACHINE, verdict.feedback
        assert verdict.feasible == (source is EAT_MEMORY), verdict.feedback
        assert pool.replaced == 0 and os.path.exists(f"/proc/{pid}")
        assert pool.verify(task, RELU).feasible  # and still judges the next candidate
    finally:
        pool.close()
