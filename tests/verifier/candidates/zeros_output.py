"""Correctness, for cpu_l1/11_softmax: the native kernel writes zeros. Softmax values of 1024-wide rows
are ~1e-3, so almost every element is inside atol=1e-2 (all of them for wider rows): KernelBench issue
#165. The degenerate-output check (all zeros) must reject it even where the tolerance does not."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void softmax_zero(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f * x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.softmax_zero(x, out, x.numel())
        return out
