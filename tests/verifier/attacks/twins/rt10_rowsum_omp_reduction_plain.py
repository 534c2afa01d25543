"""Honest twin of c2_unwatched/rt10_omp_race_hidden_by_one_thread.py (red-team round 10): the same OpenMP row sum
built with -DHONEST, the shared accumulator a reduction(+:acc), so it is right at any thread count.
Task: tests/verifier/attacks/tasks/rt10_rowsum.py (64 x 16384).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void rowsum(const float* __restrict x, float* __restrict y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * cols;
        double acc = 0.0;
#ifdef HONEST
        #pragma omp parallel for reduction(+:acc) schedule(static)
#else
        #pragma omp parallel for schedule(static)
#endif
        for (int64_t c = 0; c < cols; ++c) acc += p[c];  // unguarded read-modify-write of a shared double
        y[r] = (float)acc;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O1", "-DHONEST"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        lib.rowsum(x, out, x.shape[0], x.shape[1])
        return out
