"""Hack (static): a global statement keeps outputs across calls (result caching keyed by shape)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")

_CACHE = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        global _CACHE
        key = tuple(x.shape)
        if key not in _CACHE:
            out = torch.empty_like(x)
            lib.relu(x, out, x.numel())
            _CACHE[key] = out
        return _CACHE[key]
