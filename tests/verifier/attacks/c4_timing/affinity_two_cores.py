"""Class 4 - timing can be gamed: the verifier pins both sides to one CPU and times them at one thread,
but `sched_setaffinity` is an ordinary libc call (no text rule names it) and an OpenMP
`num_threads(2)` clause overrides OMP_NUM_THREADS. The second OpenMP thread moves itself to the
other CPU, so GELU runs on two cores while the reference gets one: a fake speedup of up to 2x.
Defences: the affinity syscalls denied by seccomp (and the thread policy enforced for both sides
alike)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
#include <omp.h>
#include <sched.h>

static int home = -1;

extern "C" void gelu(const float* x, float* y, int64_t n) {
    if (home < 0) home = sched_getcpu();               // the CPU the verifier pinned us to
    #pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1 && sched_getcpu() == home) {
            cpu_set_t other;
            CPU_ZERO(&other);
            for (int c = 0; c < 64; ++c) if (c != home) CPU_SET(c, &other);
            sched_setaffinity(0, sizeof other, &other);
        }
        #pragma omp for schedule(dynamic, 8192)
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.gelu(x, out, x.numel())
        return out
