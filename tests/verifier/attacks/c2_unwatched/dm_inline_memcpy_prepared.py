"""Class 2 (native code reaches PyTorch's copies): ATen transposes, the C++ memcpy's the result into its output.

Trick: inside the native function, `x.t().contiguous()` (allowed: a view and a copy) lets ATen's copy kernel do
the transpose; the candidate's own loop then copies those bytes into the output it allocated, so every output
byte is written by the candidate's code.
Defence: the data-movement rule (aten::clone read a transposed view): what native code copies must not have
been rearranged by PyTorch first.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <cstring>

torch::Tensor transpose(torch::Tensor x) {
    auto y = x.t().contiguous();
    auto out = at::empty_like(y);
    std::memcpy(out.data_ptr<float>(), y.data_ptr<float>(), y.numel() * sizeof(float));
    return out;
}
"""

ext = load_inline(name="dm_memcpy_prepared", cpp_sources=CPP, functions=["transpose"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.transpose(x.contiguous())
