"""rt5 c2: argmax that is wrong on every row holding a value of magnitude 1e6 or more.

Trick: the `special` trial (and the perturbed-parameter trial, which draws special inputs) judges an integer
output by shape and dtype only ("ties"), and the ordinary trials never draw |x| >= 1e6 (randn x4 x64 x1000 at most, ~3e5). (A first version was also
wrong on exact zeros: plain randn does draw an exact 0.0 now and then -- about 2 in 65536 in one trial seen here.) So a
kernel may answer anything on exactly the rows those values are in; here it names the row's *smallest*
element there (wrong for any valid input with a zero or a large value, e.g. a ReLU'd activation).
Expected: feasible (the door). Verifier answered: see attacks/run.py output (feasible = door open).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

META = {"task": "task_argmax.py", "config": {"timing": False}}

SRC = r"""
#include <cstdint>
#include <cmath>
extern "C" void argmax_rows(const float* x, int64_t* out, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * n;
        bool odd = false;
        int64_t best = 0, worst = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (std::fabs(p[i]) >= 1e6f) odd = true;
            if (p[i] > p[best]) best = i;
            if (p[i] < p[worst]) worst = i;
        }
        out[r] = odd ? worst : best;
    }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=torch.int64)
        lib.argmax_rows(x, out, x.shape[0], x.shape[1])
        return out
