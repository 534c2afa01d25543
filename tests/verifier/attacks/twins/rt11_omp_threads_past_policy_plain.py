"""Honest twin of rt11_omp_threads_past_policy.py: no num_threads clause (the verdict's one thread).

TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=64,dim=65536
TIMING: on
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    #pragma omp parallel for simd schedule(static) NUM_THREADS_CLAUSE
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = v < 0.0f ? 0.0f : v; }
}
"""

lib = load_cpp(CPP_SOURCE.replace("NUM_THREADS_CLAUSE", ""))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
