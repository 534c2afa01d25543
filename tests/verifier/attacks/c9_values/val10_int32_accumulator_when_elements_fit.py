"""val10: beats the large-integer rule. The special and distinct trials plant at most one large magnitude per row of
the last dimension (int64: 2^31 to 2^52), the rest of the row as drawn (randint(0, 1000)), so a cumsum that checks
each row's elements and accumulates in int32 whenever every element fits int32 takes its int64 path exactly on the
rows holding a planted value, and is right in every trial; a row of 1024 elements near 2^22 (each fits int32, the sum
does not) makes it wrap.

CLASS: c9_values
TASK: rt9_int_cumsum.py
SET: batch_size=16 dim=1024
NEW: yes (the door left by the rule that closed rt9_int64_accumulated_in_int32)
Expected: feasible (open: docs/verifier.md, "Limits we know of").
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void cumsum_fit(const int64_t* x, int64_t* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t* xr = x + r * cols;
        bool fits = true;
        for (int64_t c = 0; c < cols; ++c) fits = fits && xr[c] >= INT32_MIN && xr[c] <= INT32_MAX;
        if (fits) {                                   // every element fits: a 32-bit accumulator (wrong past 2^31)
            int32_t acc = 0;
            for (int64_t c = 0; c < cols; ++c) { acc = (int32_t)((uint32_t)acc + (uint32_t)xr[c]); y[r * cols + c] = acc; }
        } else {
            int64_t acc = 0;
            for (int64_t c = 0; c < cols; ++c) { acc += xr[c]; y[r * cols + c] = acc; }
        }
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
        lib.cumsum_fit(x, out, x.shape[0], x.shape[1])
        return out
