"""Correctness: exact ReLU values, but returned as float64 instead of the reference's float32."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_f64(const float* x, double* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0 : (double)x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=torch.float64)
        lib.relu_f64(x, out, x.numel())
        return out
