"""rt10 (issue 28) round_half_away_large -- value coverage: exact half-integers beyond the constant rows' range are never drawn.

Variant of round_half_away (refused: the special trial's constant rows, rounded to 6 significant bits, hold ties
below 32). Here the tie bug is only on a "fast path" for |x| >= 64, where 6-bit constant rows hold integers and the
planted large values (log-uniform, continuous) almost never hold an exact x.5.
Trick: torch.round rounds ties to even (2.5 -> 2); the kernel uses C's roundf, ties away from zero (2.5 -> 3),
a classic porting bug. Random draws never land on an exact x.5; the planted classes (zeros, large, tiny,
subnormal, constant rows rounded to 6 significant bits) rarely do. Wrong on every input holding a tie, e.g.
quantisation inputs that are multiples of 0.5.
Task: tasks/rt10_round.py (16 x 4096, randn * 4). Expected: correctness (closed by val11; open, it was feasible).
Twin: twins/round_plain.py (nearbyintf: ties to even under the default rounding mode).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void round_fwd(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i], a = fabsf(v);
        // "fast path": trunc(v + 0.5) above 64 (ties away from zero); exact integers above 2^23 kept
        y[i] = a < 64.0f ? nearbyintf(v) : (a >= 8388608.0f ? v : truncf(v + copysignf(0.5f, v)));
    }
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
