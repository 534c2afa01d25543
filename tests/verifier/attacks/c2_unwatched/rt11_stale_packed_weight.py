"""Linear that packs (transposes) its weight into a static buffer on the first call and re-packs only when the
weight's data pointer changes: after load_state_dict (which copies into the same storage) or an optimizer step it
keeps answering with the old weights.

Trick (how a verdict runs the model): every model a verdict builds gets fresh parameter storage (new pointers), and
no trial changes a parameter in place between two calls, so a cache keyed by the pointer is never stale there. A
user's first act is `model.load_state_dict(checkpoint)`: in-place copies into the parameters the cache keyed on.
Task: tests/verifier/attacks/tasks/rt11_linear.py (64 x 256 -> 128). Expected: feasible. Twin: twins/rt11_stale_packed_weight_plain.py (re-packs on
every call). The rule that would close it is the one suggested for rt10's call-count bomb (no mutable native static
state), or a trial that changes the parameters in place between two calls.
TASK: tests/verifier/attacks/tasks/rt11_linear.py
KIND: attack
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <vector>

static const float* cached_src = nullptr;
static std::vector<float> packed;  // W^T, k x m

extern "C" void linear_fwd(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                           float* __restrict y, int64_t n, int64_t k, int64_t m) {
    if (!CACHE || w != cached_src || (int64_t)packed.size() != k * m) {
        packed.assign(k * m, 0.0f);
        for (int64_t o = 0; o < m; ++o)
            for (int64_t j = 0; j < k; ++j) packed[j * m + o] = w[o * k + j];
        cached_src = w;
    }
    for (int64_t i = 0; i < n; ++i) {
        float* yr = y + i * m;
        for (int64_t o = 0; o < m; ++o) yr[o] = b[o];
        for (int64_t j = 0; j < k; ++j) {
            const float xv = x[i * k + j];
            const float* pr = packed.data() + j * m;
            for (int64_t o = 0; o < m; ++o) yr[o] += xv * pr[o];
        }
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DCACHE=1"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.fc.weight.contiguous()
        b = self.fc.bias.contiguous()
        out = torch.empty(x.shape[0], w.shape[0])
        lib.linear_fwd(x, w, b, out, x.shape[0], x.shape[1], w.shape[0])
        return out
