"""Class 1 (the glue allow-list): an `as_strided` window plus `.contiguous()` is a transpose in PyTorch.

Trick: `as_strided` is an allowed view; with strides (1, cols) over the input it *is* the transpose, and
`.contiguous()` makes PyTorch's copy kernel materialise it. A decoy native call reads one element.
Defence: the data-movement rule: `clone` read a strided window, not a whole tensor.
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
        rows, cols = x.shape
        y = x.as_strided((cols, rows), (1, cols)).contiguous()
        lib.touch(y)
        return y
