"""Class 2 - only checked calls are watched, and the watcher can be felt: the operator recorder is a
Python dispatch mode, so while it is active even `torch.empty(0)` costs tens of microseconds more.
Forward times that with a native clock; slow means "recorded" and the native kernel runs, fast means
"timed" and PyTorch (`x.clamp(min=0)`) does the work. Defences: the allow-list (no tensor compute in
forward) and every call observed the same way."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <ctime>
extern "C" int64_t now_ns(int unused) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        best = 10**12
        for _ in range(5):
            t0 = lib.now_ns(0)
            torch.empty(0)
            best = min(best, lib.now_ns(0) - t0)
        if best < 8000:  # no Python dispatch mode on the stack: nobody is recording
            return x.clamp(min=0)
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
