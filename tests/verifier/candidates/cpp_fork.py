"""Hack (static, native): the kernel calls fork() (a process that outlives the call, e.g. to compute
after the timer stopped or to escape the sandbox)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <unistd.h>
#include <cstdint>

extern "C" void relu(const float* x, float* y, int64_t n) {
    pid_t pid = fork();
    if (pid == 0) {
        for (;;) pause();
    }
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
