"""Class 1 (the glue allow-list): forward returns a transposed *view*; the worker's output copy transposes it.

Trick: no copy happens in forward at all: `x.t()` is a view, and a decoy native call reads one element. The worker
writes each returned tensor into the shared region with `copy_`, after the operator recorder has stopped, so
PyTorch's copy kernel does the transpose outside every rule.
Defence: the data-movement rule on outputs: a returned tensor must be contiguous and not memory of an input.
"""
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
        lib.touch(x)
        return x.t()
