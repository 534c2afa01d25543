"""Class 2 - only checked calls are watched: the verifier records torch operators during its 8
correctness trials (5 standard + 3 perturbed) only, so the candidate counts its calls and runs its
native kernel for those, then `x.clamp(min=0)` (PyTorch) for every timed call, with a decoy native
call to satisfy "a timed call ran a native kernel". Defences: the allow-list (no state, no tensor
compute in forward) and every call observed."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" int touch(int v) { return v + 1; }
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 8:
            lib.touch(self.calls)
            return x.clamp(min=0)
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
