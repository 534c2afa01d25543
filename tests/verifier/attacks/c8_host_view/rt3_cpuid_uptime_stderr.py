"""rt3 class 6 (host information in feedback): the machine's identity through allowed instructions and OpenMP.

The trick: `cpuid` is an allowed instruction (it is in the binary judge's families) and `omp_get_*` are allowed
OpenMP entry points. The kernel reads the CPU brand string and whether it runs under a hypervisor (cpuid leaves
0x80000002-4 and 1, through cpuid.h's inline `__get_cpuid`: the `__cpuid` macro would put `__asm__` in the
candidate's own lines), the host's uptime (`omp_get_wtime()`, libgomp's CLOCK_MONOTONIC seconds: a clock, which the
judge otherwise refuses as "clocks and sleeping") and the processor count, prints them to stderr (allowed), then
stops with `__builtin_trap()` (ud2, an allowed instruction) so the verdict quotes the stderr tail.

Expected: host facts (CPU model, hypervisor, uptime) in the feedback. Verifier answered: see attacks/run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cpuid.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <omp.h>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    unsigned int r[12] = {0};
    char brand[49] = {0};
    // __get_cpuid is cpuid.h's inline function: its asm is the header's line, not the candidate's
    for (unsigned int i = 0; i < 3; ++i) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    std::memcpy(brand, r, 48);
    unsigned int a = 0, b = 0, c = 0, d = 0;
    __get_cpuid(1, &a, &b, &c, &d);
    const int hypervisor = (c >> 31) & 1;
    std::fprintf(stderr, "HOSTINFO cpu=[%s] hypervisor_bit=%d uptime_s=%.0f procs=%d\n", brand, hypervisor,
                 omp_get_wtime(), omp_get_num_procs());
    std::fflush(stderr);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    __builtin_trap();
}
"""
lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu_forward(x.contiguous(), out, x.numel())
        return out
