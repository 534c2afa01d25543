"""rt10 omp_race_hidden_by_one_thread -- value coverage of the execution: every call runs on one thread.

Trick: a row sum parallelised over the columns with `#pragma omp parallel for` and a shared accumulator updated
without `reduction(+:...)` or an atomic: a data race that loses updates whenever two threads run. The verifier
times and checks at `threads` = 1 (OMP_NUM_THREADS=1 in the workers), so the race never happens; on a user's
machine (OpenMP's default: one thread per core) the sums are wrong. The twin uses reduction(+:acc).
Task: tests/verifier/attacks/tasks/rt10_rowsum.py (64 x 16384). Expected if open: feasible.
(rt10's demo_user_inputs.py ran it with 2 threads: wrong sums.)
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

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        lib.rowsum(x, out, x.shape[0], x.shape[1])
        return out
