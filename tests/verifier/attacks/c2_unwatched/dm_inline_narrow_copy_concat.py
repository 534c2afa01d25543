"""Class 2 (native code reaches PyTorch's copies): concatenation as two `narrow(...).copy_` of whole inputs.

Trick: both sources are whole, contiguous inputs and each copy is a plain memcpy, so a rule that only asks for
"a contiguous source" passes; the concatenation is in the destinations, two row ranges of the output.
Defence: the data-movement rule (aten::copy_ wrote into a part of a tensor, not a whole tensor; and the returned
output was written by PyTorch copies).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor concat(torch::Tensor a, torch::Tensor b) {
    auto out = at::empty({a.size(0) + b.size(0), a.size(1)}, a.options());
    out.narrow(0, 0, a.size(0)).copy_(a);
    out.narrow(0, a.size(0), b.size(0)).copy_(b);
    return out;
}
"""

ext = load_inline(name="dm_narrow_copy", cpp_sources=CPP, functions=["concat"], extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.concat(a.contiguous(), b.contiguous())
