"""Class 1 (the glue allow-list): `index_select` with an index made of allowed pieces does the upsampling.

Trick: nearest upsampling by 2 is `index_select` along H and W with the index [0, 0, 1, 1, ...]; the index is built
from an allocation (`new_empty`) the glue may make, then PyTorch gathers. A decoy native call reads one element.
Defence: the glue allow-list (`index_select` is not a view) and the operator recorder (aten::index_select,
aten::arange are not allowed operators).
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
        h, w = x.shape[2], x.shape[3]
        rows = torch.arange(2 * h) // 2
        cols = torch.arange(2 * w) // 2
        y = x.index_select(2, rows).index_select(3, cols)
        lib.touch(y)
        return y
