"""Honest twin of rt11_int_valued_relu.py: the same ReLU loop without the integer branch.

TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16,dim=4096
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        float r = v < 0.0f ? 0.0f : v;
        const float a = std::fabs(v);
        
        y[i] = r;
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
