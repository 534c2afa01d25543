"""Class 2 (native code reaches PyTorch's copies): `at::clone_out` with a transposed view as its source.

Trick: the binary judge allows the operators that "only allocate, view or copy" by operator name, and
`clone.out` is `clone` with an `out=` argument: the C++ writes the transpose of x into the output it allocated
through ATen's copy kernel, so the output is not even a fresh PyTorch tensor.
Defence: the data-movement rule (the recorder sees aten::clone.out with its `out` argument: the source is a
transposed view, not a whole tensor).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor transpose(torch::Tensor x) {
    auto out = at::empty({x.size(1), x.size(0)}, x.options());
    at::clone_out(out, x.t());
    return out;
}
"""

ext = load_inline(name="dm_clone_out", cpp_sources=CPP, functions=["transpose"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.transpose(x.contiguous())
