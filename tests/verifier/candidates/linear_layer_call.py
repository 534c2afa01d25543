"""Hack (dynamic), for cpu_l2/01_gemm_bias_relu: the GEMM is done by calling self.linear(x) (PyTorch's
addmm); only the ReLU is native. Calling a module passes the static rules; the recorder sees addmm."""
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
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        h = self.linear(x).contiguous()
        out = torch.empty_like(h)
        lib.relu(h, out, h.numel())
        return out
