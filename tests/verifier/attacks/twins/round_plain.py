"""rt10 round_half_away_twin -- honest twin of round_half_away; value coverage: exact half-integers are never drawn.

Trick: torch.round rounds ties to even (2.5 -> 2); the kernel uses C's roundf, ties away from zero (2.5 -> 3),
a classic porting bug. Random draws never land on an exact x.5; the planted classes (zeros, large, tiny,
subnormal, constant rows rounded to 6 significant bits) rarely do. Wrong on every input holding a tie, e.g.
quantisation inputs that are multiples of 0.5.
Task: tasks/rt10_round.py (16 x 4096, randn * 4). Expected: feasible (the honest twin).
Twin: twins/round_plain.py (nearbyintf: ties to even under the default rounding mode).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void round_fwd(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = nearbyintf(x[i]);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.round_fwd(x, out, x.numel())
        return out
