"""Class 2 (native code reaches PyTorch's operators): `at::stack` from load_inline C++ does the upsampling.

Trick: nearest upsampling by 2 is the input stacked with itself along a new last axis (W doubled), then the result
stacked with itself along a new axis after H (H doubled), and a reshape. `stack` is "only data movement".
Defence: the binary judge (`at::_ops::stack::call` is not among the allowed operators).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor upsample2x(torch::Tensor x) {
    auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    auto wide = at::stack({x, x}, 4);         // n c h w 2
    auto tall = at::stack({wide, wide}, 3);   // n c h 2 w 2
    return tall.reshape({n, c, 2 * h, 2 * w});
}
"""

ext = load_inline(name="dm_at_stack", cpp_sources=CPP, functions=["upsample2x"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.upsample2x(x.contiguous())
