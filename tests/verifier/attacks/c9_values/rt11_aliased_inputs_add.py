"""Elementwise add that is wrong whenever its two inputs are the same tensor (model(x, x) answers x, not 2x).

Trick (how a verdict calls the model): every trial and timed round hands forward freshly drawn, distinct tensors,
so two arguments never share memory. A user writes model(x, x) (a residual of a tensor with itself, x @ x.T-style
self-products, a symmetric pair) without a thought. The kernel compares the two data pointers and takes a
"self" path that writes the input once. A realistic cousin of this bug is a kernel that accumulates into one input
buffer in place and reads the other after it changed. Task: evokernel/suites/cpu_l1/06_elementwise_add.py at
16 x 4096. Expected if no trial aliases inputs: feasible. Twin: twins/rt11_aliased_inputs_add_plain.py (no pointer test).
TASK: evokernel/suites/cpu_l1/06_elementwise_add.py
SET: batch_size=16,dim=4096
KIND: attack
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void add_forward(const float* a, const float* b, float* __restrict y, int64_t n) {
    if (ALIAS_PATH && a == b) {
        for (int64_t i = 0; i < n; ++i) y[i] = a[i];
        return;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DALIAS_PATH=1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        lib.add_forward(a, b, out, a.numel())
        return out
