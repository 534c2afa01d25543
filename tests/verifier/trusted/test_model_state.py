"""The model's state after a call (`verifier/trusted/model_state.py`): ModelNew's parameters and buffers change
exactly as Model's do. Each kernel below beats a weaker form of the rule and is refused by this one:

* a weight or bias changed only on the 2nd call (a check after the first trial only misses it), by one unit in
  the last place (a check within the output tolerance misses it; an unchanged tensor is compared bit for bit);
* the same change on a call past the trials, among the timed rounds (only the check after the timing sees it);
* a BatchNorm's running variance updated 0.3% high on every call (within the elementwise 1e-2, outside float32's
  norm-wise 1e-4: a check at the elementwise tolerance alone misses it);
* num_batches_tracked counted on the first call only (integers are compared exactly).

What survives, on purpose: a running statistic off by float32 rounding (a relative 1e-5 on every call is within
the norm-wise 1e-4, like an honest kernel's other order of summation; measured feasible, not a door we close).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evokernel.tasks.load import load_task
from evokernel.verifier.message_codec import TensorMeta, align
from evokernel.verifier.trusted.failures import Fail
from evokernel.verifier.trusted.model_state import StateJudge

TASKS = Path(__file__).resolve().parents[1] / "attacks" / "tasks"

LINEAR = r'''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
extern "C" void linear_fwd(const float* __restrict x, float* w, float* b, float* __restrict y, int64_t m,
                           int64_t k) {
    static int64_t calls = 0;
    ++calls;
    for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < k; ++o) {
            float s = b[o];
            for (int64_t i = 0; i < k; ++i) s += x[r * k + i] * w[o * k + i];
            y[r * k + o] = s;
        }
    if (calls == SCRIBBLE_AT) b[0] = std::nextafter(b[0], INFINITY);  // one unit in the last place, once
}
""")


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], self.fc.weight.shape[0], dtype=x.dtype)
        lib.linear_fwd(x, self.fc.weight, self.fc.bias, out, x.shape[0], x.shape[1])
        return out
'''

BATCHNORM = r'''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
extern "C" void bn_train(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                         float* __restrict rmean, float* __restrict rvar, int64_t* __restrict tracked,
                         float* __restrict y, int64_t n, int64_t c, double eps, double momentum) {
    static int64_t calls = 0;
    ++calls;
    for (int64_t j = 0; j < c; ++j) {
        double s = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < n; ++i) s += x[i * c + j];
        const double mean = s / n;
        for (int64_t i = 0; i < n; ++i) { const double d = x[i * c + j] - mean; s2 += d * d; }
        const double inv = 1.0 / std::sqrt(s2 / n + eps);
        for (int64_t i = 0; i < n; ++i) y[i * c + j] = (float)((x[i * c + j] - mean) * inv * w[j] + b[j]);
        rmean[j] = (float)((1.0 - momentum) * rmean[j] + momentum * mean);
        rvar[j] = (float)(((1.0 - momentum) * rvar[j] + momentum * (s2 / (n - 1))) * VAR_FACTOR);
    }
    if (COUNT_ALWAYS || calls == 1) tracked[0] += 1;
}
extern "C" void bn_eval(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                        const float* __restrict rmean, const float* __restrict rvar, float* __restrict y,
                        int64_t n, int64_t c, double eps) {
    for (int64_t j = 0; j < c; ++j) {
        const double inv = 1.0 / std::sqrt((double)rvar[j] + eps);
        for (int64_t i = 0; i < n; ++i) y[i * c + j] = (float)((x[i * c + j] - rmean[j]) * inv * w[j] + b[j]);
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if not self.training:  # eval(): the running statistics (a verdict's first plain trial runs in eval mode)
            lib.bn_eval(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var, out,
                        x.shape[0], x.shape[1], self.bn.eps)
            return out
        lib.bn_train(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var,
                     self.bn.num_batches_tracked, out, x.shape[0], x.shape[1], self.bn.eps, self.bn.momentum)
        return out
'''


def linear(scribble_at: int) -> str:
    return LINEAR.replace("SCRIBBLE_AT", str(scribble_at))


def batchnorm(var_factor: str = "1.0", count_always: bool = True) -> str:
    return BATCHNORM.replace("VAR_FACTOR", var_factor).replace("COUNT_ALWAYS", "1" if count_always else "0")


@pytest.fixture(scope="module")
def linear_task():
    return load_task(TASKS / "rt10_linear_square.py", {"batch_size": 16, "features": 64})


@pytest.fixture(scope="module")
def bn_task():
    return load_task(TASKS / "rt10_bn_train.py", {"batch_size": 64, "num_features": 32})


# --- through the verifier ------------------------------------------------------------------------------------


def test_honest_kernels_that_never_write_their_state_or_update_it_as_torch_are_feasible(verifier, linear_task,
                                                                                         bn_task):
    v = verifier.verify(linear_task, linear(scribble_at=-1))
    assert v.feasible, v.feedback
    v = verifier.verify(bn_task, batchnorm())
    assert v.feasible, v.feedback


def test_a_bias_changed_by_one_ulp_on_the_second_call_is_refused(verifier, linear_task):
    v = verifier.verify(linear_task, linear(scribble_at=2))
    assert v.failed_gate == "correctness", v.feedback
    assert v.feedback.startswith("trial 2 (inputs by keyword): forward changed ModelNew's parameter fc.bias (1 of 64 "
                                 "elements differ")
    assert "Model's forward leaves its tensor of that name unchanged" in v.feedback


def test_a_change_past_the_trials_is_refused_after_the_timed_calls(cache_dir, linear_task):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    cfg = VerifyConfig(cache_dir=cache_dir, run_timeout_s=5.0, warmup=2, min_rounds=4, max_rounds=6,
                       timing_budget_s=0.5, compile_baseline=False)
    calls_in_trials = cfg.trials + len(cfg.perturbations) + 2  # the perturbed-parameter trials: two more
    with Verifier("cpu", cfg) as v:
        verdict = v.verify(linear_task, linear(scribble_at=calls_in_trials + 2))
    assert verdict.failed_gate == "correctness", verdict.feedback
    assert verdict.feedback.startswith("after the timed calls: forward changed ModelNew's parameter fc.bias")


def test_running_variance_biased_beyond_the_tolerance_is_refused(verifier, bn_task):
    """3% high: beyond 1e-2 x (1 + |expected|) at once. (0.3% high passes: KNOWN LIMIT, the bound is the outputs' one,
    since a running variance deep in a network carries the rounding of every layer before it, and values are compared
    on the eight trials without planted large values only.)"""
    v = verifier.verify(bn_task, batchnorm(var_factor="1.03"))
    assert v.failed_gate == "correctness", v.feedback
    # trial 1 runs in eval mode (no update): the first training-mode call is trial 2's
    assert v.feedback.startswith("trial 2 (inputs by keyword): after forward, ModelNew's buffer bn.running_var is not "
                                 "what Model's forward leaves in it: buffer bn.running_var: "), v.feedback
    assert "differ by more than 0.01 x (1 + |expected|)" in v.feedback, v.feedback


def test_state_compare_is_elementwise_with_nonfinite_positions_matched():
    """A statistic whose exact value is ~0 is rounding noise on both sides (KernelBench level-3 20's running mean:
    1e-8 and 3e-8 from float64): accepted; 0.2% off a value of 1, a NaN where the reference is finite, or -Inf for
    +Inf: refused."""
    from evokernel.verifier.trusted.model_state import _state_compare

    ref = torch.tensor([1e-8, 1.0, float("inf"), float("nan")])
    assert _state_compare(torch.tensor([2.9e-8, 1.0, float("inf"), float("nan")]), ref, 1e-3, "b").ok
    assert _state_compare(torch.tensor([-3e-8, 1.0009, float("inf"), float("nan")]), ref, 1e-3, "b").ok
    assert not _state_compare(torch.tensor([1e-8, 1.0025, float("inf"), float("nan")]), ref, 1e-3, "b").ok
    assert not _state_compare(torch.tensor([float("nan"), 1.0, float("inf"), float("nan")]), ref, 1e-3, "b").ok
    assert not _state_compare(torch.tensor([1e-8, 1.0, float("-inf"), float("nan")]), ref, 1e-3, "b").ok
    assert not _state_compare(torch.tensor([1e-8, 1.0, float("inf"), 0.0]), ref, 1e-3, "b").ok


def test_a_counter_counted_once_is_refused(verifier, bn_task):
    v = verifier.verify(bn_task, batchnorm(count_always=False))
    assert v.failed_gate == "correctness", v.feedback
    # counted on its first training-mode call (trial 2; trial 1 runs in eval mode), refused at the next
    assert v.feedback.startswith("trial 3"), v.feedback
    assert ("after forward, ModelNew's buffer bn.num_batches_tracked is not what Model's forward leaves in it"
            in v.feedback), v.feedback


def test_a_renamed_norm_without_the_updated_buffers_is_refused(verifier, bn_task):
    """Renaming the layer does not escape the rule: the tensors Model's forward updates must exist by name."""
    src = batchnorm().replace("self.bn", "self.norm")
    v = verifier.verify(bn_task, src)
    assert v.failed_gate == "correctness", v.feedback
    assert "Model's forward updates its buffer bn.running_mean (float32[32])" in v.feedback
    assert "ModelNew has no parameter or buffer of that name" in v.feedback


# --- the judge on its own ----------------------------------------------------------------------------------


class Region:
    """A worker's shared region as the judge reads it (``mm``, ``capacity``), filled by the test."""

    def __init__(self) -> None:
        self.mm = bytearray(1 << 16)
        self.capacity = len(self.mm)
        self.end = 0

    def entries(self, tensors: dict[str, torch.Tensor], changed: set[str] | None = None,
                kind: str = "buffer") -> list[dict]:
        """Entries as a worker writes them (with ``changed``: the reference's, values only for those)."""
        self.end = 0
        out = []
        for name, t in tensors.items():
            e = {"name": name, "kind": kind, "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
            if changed is not None:
                e["changed"] = name in changed
                if name not in changed:
                    out.append(e)
                    continue
            raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
            self.mm[self.end:self.end + len(raw)] = raw
            e["tensor"] = TensorMeta(e["dtype"], tuple(t.shape), self.end, len(raw)).to_json()
            self.end = align(self.end + len(raw))
            out.append(e)
        return out


def judge_pair(built: dict[str, torch.Tensor], after: dict[str, torch.Tensor], ref_after: dict[str, torch.Tensor],
               ref_changed: set[str]) -> None:
    judge = StateJudge(1e-2)
    cand, ref = Region(), Region()
    judge.baseline(cand, cand.entries(built))
    ref_state = judge.reference(ref, ref.entries(ref_after, ref_changed))
    judge.check("trial 1", ref_state, cand, cand.entries(after))


def test_judge_accepts_untouched_state_and_a_matching_update():
    w = torch.randn(4, 4)
    rm = torch.randn(4)
    judge_pair({"w": w, "rm": torch.zeros(4)}, {"w": w.clone(), "rm": rm * (1 + 1e-7)}, {"w": w, "rm": rm}, {"rm"})


def test_judge_refuses_a_changed_tensor_and_names_it_with_a_count_only():
    w = torch.randn(4, 4)
    w2 = w.clone()
    w2[1, 2] = 1234.5
    with pytest.raises(Fail) as exc:
        judge_pair({"w": w}, {"w": w2}, {"w": w}, set())
    assert exc.value.feedback.startswith("trial 1: forward changed ModelNew's buffer w (1 of 16 elements differ")
    assert "1234" not in exc.value.feedback  # no value quoted


def test_judge_refuses_a_missing_or_reshaped_updated_tensor_and_a_nan_written_over_a_value():
    rm = torch.randn(4)
    with pytest.raises(Fail, match="ModelNew has no parameter or buffer of that name"):
        judge_pair({}, {}, {"rm": rm}, {"rm"})
    with pytest.raises(Fail, match=r"has shape \[1, 4\]"):
        judge_pair({"rm": torch.zeros(1, 4)}, {"rm": rm.view(1, 4)}, {"rm": rm}, {"rm"})
    nan = torch.full((4,), float("nan"))
    with pytest.raises(Fail, match="forward changed ModelNew's buffer x"):
        judge_pair({"x": torch.zeros(4)}, {"x": nan}, {"x": torch.zeros(4)}, set())


def test_judge_compares_a_cast_layer_in_its_coarser_dtype():
    """A constructor may cast a layer (``.half()``): its updated statistics are judged at float16's tolerance."""
    rm = torch.randn(64)
    judge_pair({"rm": torch.zeros(64, dtype=torch.float16)}, {"rm": rm.half()}, {"rm": rm}, {"rm"})


def test_judge_refuses_a_malformed_state_as_a_runtime_failure():
    judge = StateJudge(1e-2)
    region = Region()
    with pytest.raises(Fail) as exc:
        judge.baseline(region, [{"name": "w", "kind": "weights", "shape": [1], "dtype": "float32"}])
    assert exc.value.gate == "runtime"
    with pytest.raises(Fail, match="no tensor for 'w'"):
        judge.baseline(region, [{"name": "w", "kind": "buffer", "shape": [1], "dtype": "float32"}])
    bad = SimpleNamespace(mm=region.mm, capacity=16)
    entries = Region().entries({"w": torch.zeros(64)})
    with pytest.raises(Fail, match="outside"):
        judge.baseline(bad, entries)
