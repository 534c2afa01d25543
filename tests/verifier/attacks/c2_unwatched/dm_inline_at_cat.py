"""Class 2 (native code reaches PyTorch's operators): `at::cat` from load_inline C++ does the concatenation.

Trick: concatenation is data movement, and the C++ may call ATen's allocation, view and copy operators.
Defence: the binary judge (`at::_ops::cat::call` is not among the allowed operators) and, behind it, the
operator recorder.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor concat(torch::Tensor a, torch::Tensor b) {
    return at::cat({a, b}, 0);
}
"""

ext = load_inline(name="dm_at_cat", cpp_sources=CPP, functions=["concat"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.concat(a.contiguous(), b.contiguous())
