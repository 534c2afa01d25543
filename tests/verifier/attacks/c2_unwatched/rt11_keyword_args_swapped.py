"""Matmul whose forward names its parameters (b, a) where the task's Model names them (a, b).

Trick (how a verdict calls the model): trials and timed rounds pass the inputs positionally, so the parameter
names of ModelNew.forward are never exercised. A user who calls model(a=A, b=B) -- keyword calls are ordinary in
model code -- gets B @ A (or a shape error). The kernel itself is an honest matmul of its first argument by its
second. Task: evokernel/suites/cpu_l1/15_matmul.py at m=n=64, k=32 (square enough that B @ A has a shape only when
m == n; with m=n the keyword call silently answers the wrong product). Expected: feasible if the signature is never
compared. No twin needed (the kernel is the twin; only the names differ).
TASK: evokernel/suites/cpu_l1/15_matmul.py
SET: m=64,k=64,n=64
KIND: attack
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
extern "C" void mm(const float* __restrict p, const float* __restrict q, float* __restrict y,
                   int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t t = 0; t < k; ++t) s += (double)p[i * k + t] * q[t * n + j];
            y[i * n + j] = (float)s;
        }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, b, a):
        b = b.contiguous()
        a = a.contiguous()
        out = torch.empty(b.shape[0], a.shape[1])
        lib.mm(b, a, out, b.shape[0], b.shape[1], a.shape[1])
        return out
