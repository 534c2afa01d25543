"""A column gather that is right for indices in [0, C), for -1 and for -C, and wrong for every other negative index.

CLASS: c2_values
TASK: task_negative_index.py
SET: batch_size=64 cols=64 picks=256
SUCCESS: feasible
NEW: yes (the newest code: integer_inputs' sentinels)
The trick: integer_inputs plants the drawn boundaries (0, C-1) and the sentinels -1, -100 (refused here: x[:, -100]
raises for C = 64) and -(max+1) = -C, each kept where the reference accepts it. Python-style indexing accepts every
value in [-C, C); the planted set never holds -2 .. -(C-1). The kernel maps -1 -> C-1, -C -> 0 and any other
negative index to column 0. Expected: feasible (wrong for valid inputs x[:, -2]). Verdict: run.py table.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void gather_cols(const float* x, const int64_t* idx, float* y, int64_t rows, int64_t cols, int64_t k) {
    for (int64_t j = 0; j < k; ++j) {
        int64_t c = idx[j];
        if (c < 0) c = (c == -1) ? cols - 1 : 0;   // -C maps to 0 correctly; -2 .. -(C-1) wrongly
        for (int64_t r = 0; r < rows; ++r) y[r * k + j] = x[r * cols + c];
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, idx):
        x = x.contiguous()
        idx = idx.contiguous()
        out = torch.empty(x.shape[0], idx.shape[0], dtype=x.dtype)
        lib.gather_cols(x, idx, out, x.shape[0], x.shape[1], idx.shape[0])
        return out
