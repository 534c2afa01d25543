"""rt10 buffer_scale_ignored_twin -- honest twin of buffer_scale_ignored; value coverage of state: a floating buffer other than a norm's statistics is never
varied.

Trick: the task multiplies by `self.scale`, a float buffer that is ones at construction and a checkpoint's values in
use (a layer scale, a dequantisation scale). The perturbed-parameter trials draw constant initialisers and widen
every *parameter* and a norm's running statistics, but leave other buffers as the constructor made them ("the
task's structure"), so `scale` is 1 in every trial and timed round. The kernel never reads it: right in every
verdict, wrong for every loaded checkpoint whose scale is not 1.
Task: tasks/rt10_buffer_scale.py (16 x 4096). Expected: feasible (the honest twin).
Twin: twins/buffer_scale_plain.py (multiplies by the buffer).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void relu_scale(const float* __restrict x, const float* __restrict s, float* __restrict y,
                           int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const float v = x[r * cols + c];
#ifdef READ_SCALE
            y[r * cols + c] = (v < 0.0f ? 0.0f : v) * s[c];
#else
            (void)s;
            y[r * cols + c] = v < 0.0f ? 0.0f : v;
#endif
        }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O2", "-DREAD_SCALE"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("scale", torch.ones(dim))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_scale(x, self.scale, out, x.shape[0], x.shape[1])
        return out
