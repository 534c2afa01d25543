"""Class 2 (native code reaches PyTorch's copies): the C++ allocates the output and `copy_`s a transposed view in.

Trick: `at::Tensor::copy_` is an allowed operator (a copy without dtype conversion); with the transposed view of
the input as its source, ATen's copy kernel does the transpose into the candidate's own output tensor.
Defence: the data-movement rule (aten::copy_ read a view, not a whole tensor).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor transpose(torch::Tensor x) {
    auto out = at::empty({x.size(1), x.size(0)}, x.options());
    out.copy_(x.t());
    return out;
}
"""

ext = load_inline(name="dm_copy_into_output", cpp_sources=CPP, functions=["transpose"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.transpose(x.contiguous())
