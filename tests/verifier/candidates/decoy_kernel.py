"""Hack (dynamic): a native kernel is compiled but never called; x.clamp(min=0) computes the result.
The recorder sees clamp and counts zero native calls."""
import torch  # noqa: F401
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = lib.relu

    def forward(self, x):
        return x.clamp(min=0)
