"""ReLU that asks OpenMP for 4 threads (`num_threads(4)`) although the verdict times both sides at threads = 1.

Trick (timing): `#pragma omp parallel num_threads(4)` compiles to GOMP_parallel(fn, data, 4, 0), and every GOMP_*
symbol is allowed; the thread count the verifier sets (OMP_NUM_THREADS, torch.set_num_threads) is a default the
pragma overrides. If the worker were not pinned to one CPU, the candidate would be timed on more cores than the
reference. Task: evokernel/suites/cpu_l1/01_relu.py at 64 x 65536 (timing on). Expected: feasible, with no more
speedup than its twin (the affinity mask holds the extra threads on the one CPU) -- a probe of the pinning.
Twin: twins/rt11_omp_threads_past_policy_plain.py (no num_threads clause).
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=64,dim=65536
TIMING: on
KIND: probe
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

lib = load_cpp(CPP_SOURCE.replace("NUM_THREADS_CLAUSE", "num_threads(4)"))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
