"""Victim for c8_host_view/stdout_build_cache.py: an honest ReLU whose native source carries a marker,
standing for another user's private kernel in the shared build cache."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
// EVK-VICTIM-SECRET-5d1c: another candidate's private source
#include <cstdint>
extern "C" void relu_victim(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_victim(x, out, x.numel())
        return out
