"""Class 6 (host information in a verdict): every verdict's details name the host's cgroup path and the parent's pid.

Trick: none -- an honest ReLU (evokernel/examples/cpu/01_relu.py). The verdict's `details["limits"]["tasks"]`
says "pids cgroup (/sys/fs/cgroup/pids/evokernel-<host pid>)": the host's cgroup layout and the verifier's
host pid, which HostText does not scrub (it knows the cache, the package folder and $HOME only). Details go to
the LLM and into shared logs with the feedback (host_text.py's own docstring).
Expected: "/sys/fs/cgroup/..." with a host pid in the verdict.
Answered (final run, 2026-11-28): feasible; details name '/sys/fs/cgroup/pids/evokernel-<host pid>' (SUCCEEDED, minor).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v;
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
