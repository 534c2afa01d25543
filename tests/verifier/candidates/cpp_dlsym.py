"""Hack (static, native): the C++ looks up a libtorch symbol with dlsym at run time (reaching ATen
behind the --no-undefined link rule)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <dlfcn.h>
#include <cstdio>
#include <cstdint>

typedef void (*relu_fn)(const float*, float*, int64_t);

extern "C" void relu(const float* x, float* y, int64_t n) {
    // a symbol of libtorch_cpu, looked up in the already-loaded process image
    void* sym = dlsym(RTLD_DEFAULT, "_ZN2at4reluERKNS_6TensorE");
    if (sym != nullptr) {
        fprintf(stderr, "found the libtorch symbol at %p\n", sym);
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
