"""rt5 c2: `x > 0` answered False for x >= 1e6 (say, a kernel that clamps to a range): wrong on large values,
which only the special trial plants.

Trick: the special trial's "ties" rule skips every non-floating output (meant for indices that may name any of
several equal elements), so a bool mask or an integer count is not compared at all in the one trial that holds
exact zeros and large values. The ordinary trials never draw |x| >= 1e6. (A first version was wrong on exact zeros; plain
randn draws an exact 0.0 now and then -- 2 in 65536 in one trial -- and that run was refused.) Expected: feasible (door). Verifier: see run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

META = {"task": "task_positive_mask.py", "config": {"timing": False}}

SRC = r"""
#include <cstdint>
extern "C" void pos(const float* x, bool* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f && x[i] < 1e6f; }
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape, dtype=torch.bool)
        lib.pos(x, y, x.numel())
        return y
