"""Hack (dynamic): the result comes from the tensor method x.clamp(min=0); a real but useless native
call runs alongside so that "a native kernel ran". Passes the static rules; the ATen recorder sees clamp."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void scale(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        lib.scale(x, scratch, x.numel())
        return x.clamp(min=0)
