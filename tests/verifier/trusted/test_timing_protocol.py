"""The timing protocol against candidates that bend the measurement (issue 13, class 4), and its parts:
stopping the side not being timed, fresh inputs per round, the physics floor.

The attacks here are accepted by the old protocol (timed inputs as cyclic shifts of one base tensor, all
sides running freely on the shared CPU) with fake speedups; each test says what the old protocol gave."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted import cpu_isolation, latency, timing_protocol
from evokernel.verifier.trusted.failures import Fail

ROOT = Path(__file__).resolve().parents[3]

ROWSUM_TASK = '''"""Row sums: torch.sum over the last dimension."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=-1)


rows = 256
n = 16384


def get_inputs():
    return [torch.randn(rows, n)]


def get_init_inputs():
    return []
'''

# Remembers the last input it summed with its prefix sums and a value -> position index; when a new input is
# a cyclic shift of it (its first two values found consecutively in the remembered one), every row sum is a
# difference of two prefix sums: O(rows) instead of O(rows * n). Timed inputs that are shifted copies of one
# base tensor hit this every round (13x and more in the old protocol); fresh draws never do, and then the
# kernel pays for rebuilding its index on every call.
SHIFT_CACHE = r'''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

static uint32_t bits(float v) { uint32_t b; std::memcpy(&b, &v, 4); return b; }

extern "C" void rowsum(const float* x, float* out, int64_t rows, int64_t n) {
    static std::vector<float> base;
    static std::vector<double> pre;
    static std::unordered_map<uint32_t, int64_t> where;
    const int64_t total = rows * n;
    if ((int64_t)base.size() == total) {
        auto it = where.find(bits(x[0]));
        if (it != where.end() && bits(base[(it->second + 1) % total]) == bits(x[1])) {
            const int64_t p = it->second;
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t a = (p + r * n) % total, b = a + n;
                double s = b <= total ? pre[b] - pre[a] : (pre[total] - pre[a]) + pre[b - total];
                out[r] = (float)s;
            }
            return;
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += x[r * n + j];
        out[r] = (float)s;
    }
    base.assign(x, x + total);
    pre.assign(total + 1, 0.0);
    for (int64_t i = 0; i < total; ++i) pre[i + 1] = pre[i] + base[i];
    where.clear();
    where.reserve(total);
    for (int64_t i = 0; i < total; ++i) where[bits(base[i])] = i;
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=torch.float32)
        lib.rowsum(x, out, x.shape[0], x.shape[1])
        return out
'''

# The honest ReLU example plus a detached thread, started on the first call, that spins whenever the candidate
# is NOT in a call of its own (and sleeps on a lock while it is): on a shared CPU it takes half of the reference's time
# slices while the reference is timed (fake speedups of ~2x here; 3.6x was measured by the red team against the
# old protocol). Native threads are refused by the binary judge; this test switches the static rules off to show
# that the timing protocol contains it on its own.
SPINNER = r'''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <thread>
#include <atomic>
#include <mutex>

static std::atomic<int> in_call{0};
static std::atomic<long> sink{0};
static std::mutex turn;

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    static bool started = false;
    in_call.store(1);
    std::lock_guard<std::mutex> mine(turn);  // the spinner sleeps on this lock while we compute
    if (!started) {
        started = true;
        std::thread([] {
            for (;;) {
                { std::lock_guard<std::mutex> wait_for_our_call_to_end(turn); }
                while (!in_call.load()) sink.fetch_add(1, std::memory_order_relaxed);
            }
        }).detach();
    }
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
    in_call.store(0);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
'''

# Right on the first eight calls (the correctness trials), then it returns the previous call's output without
# computing: every timed output is checked against the reference of the same round.
REPLAY_AFTER_TRIALS = r'''
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    static long calls = 0;
    static std::vector<float> last;
    if (++calls > 12 && (int64_t)last.size() == n) { std::memcpy(y, last.data(), n * sizeof(float)); return; }  // after 10 trials + the 2 perturbed ones
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
    last.assign(y, y + n);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
'''


@pytest.fixture(scope="module")
def timed(cache_dir):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, run_timeout_s=20.0, min_rounds=8, max_rounds=12)).start()
    yield v
    v.close()


def test_a_cache_keyed_on_shifted_inputs_never_hits_fresh_draws(timed, tmp_path):
    # old protocol: feasible, ~30x "faster" than torch.sum
    task_file = tmp_path / "rowsum.py"
    task_file.write_text(ROWSUM_TASK)
    verdict = timed.verify(load_task(task_file), SHIFT_CACHE)
    assert not (verdict.feasible and verdict.speedup > 1.5), verdict.summary()


def test_the_reference_is_timed_while_the_candidate_is_stopped(cache_dir, suite_task):
    # old protocol: the spinning thread shared the timed CPU with the reference (fake speedups of 2-4x)
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    task = suite_task("cpu_l1/01_relu.py", batch_size=32)
    with Verifier("cpu", VerifyConfig(cache_dir=cache_dir, static_rules=False, min_rounds=10, max_rounds=14)) as v:
        verdict = v.verify(task, SPINNER)
    assert verdict.feasible, verdict.feedback
    assert verdict.speedup < 1.35, verdict.summary()  # the honest loop is no faster than torch.relu


def test_every_timed_output_is_checked(timed, suite_task):
    verdict = timed.verify(suite_task("cpu_l1/01_relu.py", batch_size=8), REPLAY_AFTER_TRIALS)
    assert verdict.failed_gate == "correctness" and "a timed call gave a wrong result" in verdict.feedback


def test_stop_freezes_every_thread_and_resume_lets_them_run():
    spin = ("import threading\n"
            "def f():\n    while True: pass\n"
            "for _ in range(2): threading.Thread(target=f, daemon=True).start()\n"
            "while True: pass\n")
    p = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)
        cpu_isolation.stop(p.pid)
        before = cpu_isolation.cpu_seconds(p.pid)
        time.sleep(0.5)
        assert cpu_isolation.cpu_seconds(p.pid) - before < 0.02  # no thread ran while stopped
        cpu_isolation.resume(p.pid)
        # it runs again: CPU time grows (how fast depends on the machine's load, so wait for it, up to 30 s)
        deadline = time.monotonic() + 30
        while cpu_isolation.cpu_seconds(p.pid) - before <= 0.2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cpu_isolation.cpu_seconds(p.pid) - before > 0.2
    finally:
        p.kill()
        p.wait()


def test_stopping_a_gone_process_is_an_isolation_error():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    with pytest.raises(cpu_isolation.IsolationError):
        cpu_isolation.stop(p.pid)


class _FloorRef:
    def __init__(self, copy_s):
        self.copy_s = copy_s

    def copy_seconds(self, input_bytes, output_bytes):
        return self.copy_s


def _timing(cand_ms, ref_ms):
    return latency.Timing(candidate_ms=cand_ms, reference_ms=ref_ms, speedup=ref_ms / cand_ms, noise=0.0,
                          ci_low=1.0, ci_high=1.0, rounds=10)


def test_physics_floor_flags_a_kernel_faster_than_moving_its_bytes():
    details = {}
    with pytest.raises(Fail) as err:  # 32 MiB in + 32 MiB out; a copy of those bytes takes 4 ms
        timing_protocol.check_floor(_FloorRef(4e-3), _timing(0.3, 6.0), 32 << 20, 32 << 20, details)
    assert err.value.gate == "hack" and "below what moving its data allows" in err.value.feedback
    assert details["floor"]["applies"] and details["floor"]["floor_ms"] == pytest.approx(2.0)


def test_physics_floor_admits_real_kernels_and_operators_that_skip_bytes():
    details = {}
    timing_protocol.check_floor(_FloorRef(4e-3), _timing(2.5, 6.0), 32 << 20, 32 << 20, details)
    # the eager reference itself beats the floor: the operator does not touch all its bytes, no judgement
    timing_protocol.check_floor(_FloorRef(4e-3), _timing(0.3, 1.0), 32 << 20, 32 << 20, details)
    assert details["floor"]["applies"] is False


def test_inputs_arrive_with_the_request_that_runs_them(timed, suite_task, monkeypatch):
    # no untimed window: the candidate worker gets no request that holds inputs except the forward that uses
    # them (an input setter request was the window a candidate could compute in before the clock started)
    seen = []
    real = timed._cand_call

    def spy(cand, msg, *args, **kwargs):
        seen.append(msg)
        return real(cand, msg, *args, **kwargs)

    monkeypatch.setattr(timed, "_cand_call", spy)
    relu = (Path(__file__).resolve().parents[3] / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()
    verdict = timed.verify(suite_task("cpu_l1/01_relu.py", batch_size=8), relu)
    assert verdict.feasible, verdict.feedback
    runs = [m for m in seen if m["op"] == "run"]
    # "state": the model's parameters and buffers after construction and after the timed rounds (model_state.py),
    # "reload": its parameters negated in place before the last perturbed-parameter trial; requests that hold no inputs
    assert {m["op"] for m in seen} == {"load", "init", "run", "state", "reload"}
    assert all(set(m) <= {"op", "offset", "nonce", "capacity"} for m in seen if m["op"] in ("state", "reload"))
    assert len(runs) >= timed.config.trials + timed.config.min_rounds and all(m.get("inputs") for m in runs)


def test_some_untimed_rounds_draw_the_trials_special_values(timed, suite_task):
    """Red team round 5 (rt5_careful_only_during_trials): a static call counter let a softmax subtract the row max
    only in its first 14 calls (every trial and the warm-up; special values came only in the trials) and overflow to
    NaN on large inputs afterwards. Some rounds of the timing (at random, at least one; their times not used) draw
    the special or distinct inputs now, and are judged like those trials."""
    task = suite_task("cpu_l1/11_softmax.py", batch_size=64, dim=1024)
    honest = timed.verify(task, (ROOT / "evokernel" / "examples" / "cpu" / "11_softmax.py").read_text())
    assert honest.feasible, honest.feedback
    assert honest.details["value_rounds"] >= 1 and honest.details["timing"]["rounds"] >= timed.config.min_rounds
    careful = (ROOT / "tests" / "verifier" / "attacks" / "c9_values" / "rt5_careful_only_during_trials.py").read_text()
    verdict = timed.verify(task, careful)
    assert verdict.failed_gate == "correctness", verdict.summary()
    assert "during timing, on" in verdict.feedback and "not only the first ones" in verdict.feedback


def test_a_value_round_judges_index_outputs_as_its_trial_does():
    """On special inputs (constant rows: ties) an index output is judged by shape and dtype, as in the special
    trial; on distinct inputs, and for bool outputs, by value."""
    reply = {"ok": True, "native_calls": 1}
    idx, other = torch.tensor([3, 1]), torch.tensor([2, 1])
    timing_protocol.check_timed_output(reply, [other], [idx], 1e-2, perturb="special")
    for perturb in ("distinct", "none"):
        with pytest.raises(Fail, match="elements differ"):
            timing_protocol.check_timed_output(reply, [other], [idx], 1e-2, perturb=perturb)
    with pytest.raises(Fail, match="on special inputs"):
        timing_protocol.check_timed_output(reply, [torch.tensor([True])], [torch.tensor([False])], 1e-2,
                                           perturb="special")
