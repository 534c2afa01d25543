"""rt10 max_skips_first_element_twin -- honest twin of max_skips_first_element; value coverage of positions: a row's extreme is almost never at its first element.

Trick: an off-by-one max over the last dimension that starts its scan at index 1 (the first element never read).
It is wrong only where a row's unique maximum sits at index 0: for random rows of 4096 that is 1 row in 4096, and
the planted large values land on a random position of their row. A user's row sorted in descending order (top-k
scores, a cumulative maximum, a decreasing schedule) is wrong in every row.
Task: tasks/rt10_max.py (16 x 4096). Expected: feasible (the honest twin) (almost every seed).
Twin: twins/amax_rows_plain.py (the scan from index 0).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void amax_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * cols;
        float m = -INFINITY;
        for (int64_t c = FIRST; c < cols; ++c) m = p[c] > m || std::isnan(p[c]) ? p[c] : m;
        y[r] = m;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DFIRST=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        lib.amax_rows(x, out, x.shape[0], x.shape[1])
        return out
