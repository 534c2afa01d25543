"""Hack (static): imports threading to run the kernel on a background thread (work hidden from the
timer, or racing the output read-back)."""
import threading

import torch
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

    def forward(self, x):
        out = torch.empty_like(x)
        t = threading.Thread(target=lib.relu, args=(x, out, x.numel()))
        t.start()
        return out
