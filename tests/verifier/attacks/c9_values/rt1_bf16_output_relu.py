"""Class 2 (tolerances, dtype tricks): a float32 task answered in bfloat16 precision.

Trick: the kernel rounds every output to bfloat16 (8 significant bits, 2^-9 relative error) and returns it as
float32 -- half the bits of a float32 answer thrown away, as a kernel that stores bf16 to halve its traffic would.
The float32 tolerance (1e-2 elementwise and norm-wise, the paper's) is 20x wider than that error, and unlike
float16 (c2_values/fp16_storage_relu, caught in 1 run of 2 by a heavy-trial value above 65504) bfloat16 keeps
float32's range, so no trial can catch it.
Expected: feasible: an approximated (precision-downgraded) answer accepted for a float32 task, every time.
Answered (final run, 2026-11-28): feasible (SUCCEEDED; added after the full run, verified in the targeted rerun).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
#include <cstring>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i] > 0.0f ? x[i] : 0.0f;
        uint32_t u; memcpy(&u, &v, 4);
        if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;  // RNE to bf16
        memcpy(&y[i], &u, 4);
    }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
