"""rt9: integer inputs are planted only with their drawn minimum/maximum and a few sentinels, never with the
dtype's range, so an int64 cumulative sum accumulated in int32 (wrong as soon as a row's sum passes 2^31, i.e. for
valid int64 inputs above ~2e6 per element at this width) passes every trial.

CLASS: c2_values
TASK: task_int_cumsum.py
SET: batch_size=16 dim=1024
NEW: yes (the integer-range twin of the float32 "magnitudes above 1e10" limit)
Expected: feasible.
Verifier answered (2026-11-29): feasible (0.77x); attack succeeded: YES.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void cumsum32(const int64_t* x, int64_t* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        int32_t acc = 0;                              // 32-bit accumulator for an int64 task
        for (int64_t c = 0; c < cols; ++c) { acc += (int32_t)x[r * cols + c]; y[r * cols + c] = acc; }
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
        lib.cumsum32(x, out, x.shape[0], x.shape[1])
        return out
