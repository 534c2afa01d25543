"""Class 8 - the sandbox sees the host: the build sandbox mounts the host's root read-only, so
`#include "/etc/hostname"` compiles the host's file, and the compiler's error quotes its content
("'<hostname>' does not name a type") into the feedback the candidate gets back. Defences: a minimal
build root and an include rule (nothing outside the job folder and system headers)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include "/etc/hostname"
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
