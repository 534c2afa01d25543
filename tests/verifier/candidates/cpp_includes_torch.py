"""Hack (static, native): the load_cpp source includes <torch/extension.h> and calls at::relu, so ATen
does the compute behind a native-looking call."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <torch/extension.h>
#include <cstdint>

extern "C" void relu(const float* x, float* y, int64_t n) {
    at::Tensor in = at::from_blob(const_cast<float*>(x), {n});
    at::Tensor out = at::from_blob(y, {n});
    out.copy_(at::relu(in));
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
