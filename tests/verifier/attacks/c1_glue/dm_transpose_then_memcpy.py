"""Class 1 (the glue allow-list): PyTorch transposes, the native kernel only copies what PyTorch prepared.

Trick: `.contiguous()` is allowed glue, so `x.t().contiguous()` has PyTorch's copy kernel do the whole transpose;
the native kernel then memcpy's those bytes into the output the glue allocated. Every output byte *is* written by
native code, so a rule "the output must be the native code's" alone does not see it.
Defence: the data-movement rule (sandboxed/data_movement.py): a PyTorch copy may only duplicate a whole tensor
byte for byte; `clone` of a transposed view is a rearrangement.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
#include <cstring>
extern "C" void copy_out(const float* src, float* dst, int64_t n) { std::memcpy(dst, src, n * sizeof(float)); }
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x.t().contiguous()
        out = torch.empty_like(y)
        lib.copy_out(y, out, y.numel())
        return out
