"""rt3 class 2 (values, tolerances): outputs whose squares underflow float32 are never judged.

The trick: the correctness scan accumulates its norm statistics in the output's dtype
(`torch.dot(rr, rr)` on float32 chunks). Where every output element is below ~3.7e-23 in magnitude, every
square flushes to 0, so `ref_sq == 0` and `cand_sq == 0`: the norm-wise rule (`ref_sq > 0 and norm_rel > tol`)
and the zeros guard (`cand_sq == 0 and ref_sq > 0`) never fire, and the elementwise atol of 1e-2 accepts any
tiny value. The kernel skips tanh entirely and returns x * 1e-30 (neither constant nor a copy of the input,
so the degenerate guard is silent); every trial (scale, negate, shift, heavy: tanh saturates) stays below the
underflow line, and quick_match accepts the timed outputs for the same reason.

Expected: feasible, with a speedup from skipping tanh. Task: attacks/tasks/tiny_tanh.py.
Verifier answered: see attacks/run.py's table.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cstdint>
extern "C" void tiny(const float* __restrict x, float* __restrict y, int64_t n) {
    #pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * 1e-30f;  // not tanh: a scaled copy of the input
}
"""

lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.tiny(x, out, x.numel())
        return out
