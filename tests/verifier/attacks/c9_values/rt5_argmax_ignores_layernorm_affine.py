"""rt5 c2: argmax(LayerNorm(x)) answered as argmax(x): the whole LayerNorm and its parameters skipped.

Trick: with the default affine (weight 1, bias 0) a LayerNorm is an increasing map of each row, so the argmax of
its output is the argmax of x -- and the default affine is what the standard trials run. The one trial that
draws the parameters (the perturbed-parameter trial, made to catch kernels that hard-code default parameters)
runs on `special` inputs, and there every integer output is judged by shape and dtype only (the ties rule). So a
kernel that ignores the norm's weight and bias entirely is never compared with parameters that matter: it is
wrong for every trained model (any weight with mixed signs or a bias changes the argmax).
Expected: feasible (door). Verifier: see run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

META = {"task": "task_argmax_layernorm.py", "config": {"timing": False}}

SRC = r"""
#include <cstdint>
extern "C" void argmax_rows(const float* x, int64_t* out, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * n;
        int64_t best = 0;
        for (int64_t i = 1; i < n; ++i) if (p[i] > p[best]) best = i;
        out[r] = best;
    }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=torch.int64)
        lib.argmax_rows(x, out, x.shape[0], x.shape[1])
        return out
