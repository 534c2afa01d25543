"""Honest twin of rt5_bool_mask_wrong_on_large: x > 0 for every value."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void pos(const float* x, bool* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f; }
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape, dtype=torch.bool)
        lib.pos(x, y, x.numel())
        return y
