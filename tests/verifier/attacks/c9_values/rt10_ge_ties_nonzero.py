"""rt10 (issue 28) ge_ties_nonzero -- variant of ge_ties_across_inputs: wrong only on ties of non-zero values.

Trick: the task is a >= b; the kernel computes a > b except where both are zero (the one tie the planted
values make: two planted zeros meeting), wrong exactly where a == b != 0. Every input is drawn and planted
independently (zeros, large, tiny values at random positions of each), so a tie between the two inputs at the
same position needs two planted zeros to meet: ~n/1024^2 = 0.06 expected per special trial at 65536 elements.
A user comparing a tensor with a clamped or quantised copy of itself hits ties everywhere.
Task: tasks/rt10_ge.py. Expected: correctness (closed by val11; open, it was feasible) (measured: 3 of 5 seeds, seeds.py: planted zeros of both inputs do meet sometimes;
rt10_ge_ties_nonzero.py keeps exact answers where both are zero: 5 of 5).
Twin: twins/ge_plain.py (a >= b).
Measured (seeds.py, seeds 1000..1004): 4 of 5 feasible; seed 1000 refused in the shift trial: a + 3 and b + 3
round to the same float32 now and then (1 element of 65536), the only ties the trials make.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void ge_fwd(const float* __restrict a, const float* __restrict b, bool* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] > b[i] || (a[i] == 0.0f && b[i] == 0.0f);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty(a.shape, dtype=torch.bool)
        lib.ge_fwd(a, b, out, a.numel())
        return out
