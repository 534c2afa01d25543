"""Runtime: the native kernel writes through a null pointer (SIGSEGV in the worker)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    float* volatile target = nullptr;  // volatile: the compiler cannot prove it null and drop the store
    for (int64_t i = 0; i < n; ++i) target[i] = x[i] < 0.0f ? 0.0f : x[i];
    y[0] = target[0];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
