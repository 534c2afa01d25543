"""Class 3 (glue allow-list) + class 7: the allow-list's kinds are flow-insensitive, and timed calls are not
recorded.

Trick: the checker gives each name the kind of the LAST assignment it reads in program order, not the
union over paths. `a = A` (tensor) followed by `if A.dim() < 0: a = 0` (never true at runtime) leaves `a`
as a plain VALUE for the checker, so `a @ b` is "integer arithmetic" to it. A native call counter (state
in the library, which is allowed) tells the kernel when the correctness trials are over: the verifier
builds ModelNew a second time for the perturbed-parameter trial, runs that one trial recorded, then times
the same instance without the operator recorder. From the 2nd call after the 2nd __init__ on, forward
computes with torch (MKL) instead of the naive native loop.
Expected: feasible, and a speedup many times the honest naive twin's (PyTorch does the timed work).
Answered (final run, 2026-11-28): feasible, 0.93x eager vs the naive twin's 0.02x = 61.7x its honest twin (SUCCEEDED).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
static int64_t inits = 0, calls = 0;
extern "C" int64_t on_init() { inits += 1; calls = 0; return inits; }
extern "C" int64_t tick() { calls += 1; return (inits >= 2 && calls >= 2) ? 1 : 0; }
extern "C" void mm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.generation = lib.on_init()

    def forward(self, A, B):
        fast = lib.tick()
        a = A
        b = B
        if A.dim() < 0:
            fast = 0
            a = 0
            b = 0
        A = A.contiguous()
        B = B.contiguous()
        out = torch.empty(A.shape[0], B.shape[1])
        res = out
        if fast > 0:
            res = a @ b
        else:
            lib.mm(A, B, out, A.shape[0], A.shape[1], B.shape[1])
        if A.dim() < 0:
            res = out
        return res
