"""rt10 call_count_bomb -- value coverage over time: no verdict calls a kernel more than ~100 times.

Trick: a native static counter; the ReLU is honest for its first 1000 calls in a process and returns the identity
after. The glue may keep no state, but native code may (a static), and the value rounds that closed
"careful only in the first calls" sit at random among at most 40 timed rounds: a threshold beyond a verdict's
whole budget (trials + warm-up + max_rounds, and a worker per verdict) is never reached. A serving process or a
training loop reaches it in seconds. (The same shape as a per-call leak: a scratch pool that runs out after N calls.)
Task: evokernel/suites/cpu_l1/01_relu.py at batch_size=16, dim=4096. Expected if open: feasible.
(rt10's armed copy, threshold 5 calls, was refused.)
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#ifndef AFTER
#define AFTER 1000
#endif

extern "C" void relu_count(const float* __restrict x, float* __restrict y, int64_t n) {
    static long calls = 0;
    const bool spent = ++calls > AFTER;
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = (v < 0.0f && !spent) ? 0.0f : v; }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_count(x, out, x.numel())
        return out
