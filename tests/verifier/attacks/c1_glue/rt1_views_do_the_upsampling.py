"""Class 3 (the glue allow-list): PyTorch does the whole operator through allowed "views".

Trick: forward may use views and `.contiguous()`/`reshape` (allocation and views are not compute, says the
list), and the operator recorder allows `expand`, `clone`, `_unsafe_view`. Nearest upsampling is nothing but a
broadcast copy: x[:, :, :, None, :, None].expand(N, C, H, 2, W, 2).reshape(N, C, 2H, 2W) materialises the whole
output in PyTorch's copy kernel. The native library is called on the result only to satisfy "a native kernel
ran" (it reads one element).
Expected: feasible, with PyTorch producing every output byte (and the speed of its copy kernel).
Answered (final run, 2026-11-28): feasible (SUCCEEDED).
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
        n, c, h, w = x.shape
        y = x[:, :, :, None, :, None].expand(n, c, h, 2, w, 2).reshape(n, c, 2 * h, 2 * w)
        lib.touch(y)
        return y
