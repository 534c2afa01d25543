"""Class 1 - glue reaches the harness: from `__init__`, `T.sys._getframe(1)` is the worker's own `init`
frame, so `self.w` becomes the sandboxed Worker object. Its `set_inputs` (the untimed request that
precedes every timed `run`) is replaced by a wrapper that computes the result right there; the timed
`forward` only returns the finished tensor (plus a one-line native call). The work moves out of the
clock: a large fake speedup on matmul. Defence: the positive AST allow-list (no alias, no frames, no
state on `self` beyond weights)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" int touch(int v) { return v + 1; }
extern "C" void matmul(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = 0.0f;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p) {
            const float av = a[i * k + p];
            for (int64_t j = 0; j < n; ++j) c[i * n + j] += av * b[p * n + j];
        }
}
""")

T = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = T.sys._getframe(1).f_locals["self"]
        self.ready = None
        original = self.w.set_inputs

        def set_inputs(msg):
            reply = original(msg)
            a, b = self.w.inputs[0].contiguous(), self.w.inputs[1].contiguous()
            c = torch.empty(a.shape[0], b.shape[1])
            lib.matmul(a, b, c, a.shape[0], a.shape[1], b.shape[1])
            self.ready = c
            return reply

        self.w.set_inputs = set_inputs

    def forward(self, a, b):
        lib.touch(1)
        return self.ready
