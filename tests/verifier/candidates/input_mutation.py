"""Correctness: ReLU computed in place into the input, which is returned. The output values are right,
but inputs must be left unchanged."""
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_inplace(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        lib.relu_inplace(x, x.numel())
        return x
