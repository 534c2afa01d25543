"""rt10 weight_transposed_in_place -- value coverage of side effects: a model's parameters after forward are never
compared.

Trick: on the first call that sees a weight (keyed by its data pointer, in a native static), the kernel transposes
the Linear's square weight *in place* -- a layout that makes its inner loop contiguous -- and from then on reads
it as W^T. Every output is right. But the model's own `fc.weight` now holds W^T: `model.state_dict()` saves the
wrong matrix, and a user who loads new weights into the same tensor (`load_state_dict` copies into it) gets outputs
from their transpose, because the kernel believes that storage is already transposed. The verifier compares
outputs and inputs, never the parameters after a call.
Task: tests/verifier/attacks/tasks/rt10_linear_square.py (64 x 256, 256 x 256 weight). Expected if open: feasible.
Twin: twins/rt10_linear_private_transpose_plain.py (the same loop order on a private transposed copy).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

extern "C" void linear_fwd(const float* __restrict x, float* w, const float* __restrict b, float* __restrict y,
                           int64_t m, int64_t k) {
    static const float* seen[64] = {0};
    static float* copy = nullptr;
    const float* wt;
#ifndef PRIVATE_COPY
    bool known = false;
    for (int i = 0; i < 64; ++i) known = known || seen[i] == w;
    if (!known) {
        for (int64_t i = 0; i < k; ++i)
            for (int64_t j = i + 1; j < k; ++j) std::swap(w[i * k + j], w[j * k + i]);  // W := W^T, in place
        for (int i = 0; i < 64; ++i) if (!seen[i]) { seen[i] = w; break; }
    }
    wt = w;
#else
    copy = (float*)realloc(copy, sizeof(float) * k * k);
    for (int64_t i = 0; i < k; ++i) for (int64_t j = 0; j < k; ++j) copy[j * k + i] = w[i * k + j];
    wt = copy;
#endif
    for (int64_t r = 0; r < m; ++r) {
        float* out = y + r * k;
        for (int64_t o = 0; o < k; ++o) out[o] = b[o];
        for (int64_t i = 0; i < k; ++i) {
            const float xv = x[r * k + i];
            const float* row = wt + i * k;  // W^T row i = column i of W
            for (int64_t o = 0; o < k; ++o) out[o] += xv * row[o];
        }
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], self.fc.weight.shape[0], dtype=x.dtype)
        lib.linear_fwd(x, self.fc.weight, self.fc.bias, out, x.shape[0], x.shape[1])
        return out
