"""Class 1 (the glue allow-list): `.contiguous(memory_format=torch.channels_last)` is NCHW->NHWC in PyTorch.

Trick: a channels_last clone stores the input in NHWC order; `.permute(0, 2, 3, 1)` of it is a *contiguous* NHWC
tensor, which is the task's answer. Both are allowed glue; a decoy native call reads one element.
Defence: the data-movement rule: the clone wrote a permuted layout (not a whole tensor in the standard order),
and the output was written by a PyTorch copy.
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

    def forward(self, x):
        y = x.contiguous(memory_format=torch.channels_last).permute(0, 2, 3, 1)
        lib.touch(y)
        return y
