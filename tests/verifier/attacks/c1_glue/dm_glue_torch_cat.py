"""Class 1 (the glue allow-list): `torch.cat` in forward does the concatenation.

Trick: concatenation is "only data movement", so one might expect it among the allowed glue. A decoy native call
reads one element.
Defence: the glue allow-list (forward may allocate, view and call native code; `torch.cat` computes a new tensor
from others) and, behind it, the operator recorder (aten::cat is not an allowed operator).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" int64_t touch(const float* y) { return y[0] != y[0]; }
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        y = torch.cat([a, b], dim=0)
        lib.touch(y)
        return y
