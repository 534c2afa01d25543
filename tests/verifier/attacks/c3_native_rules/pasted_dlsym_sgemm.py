"""Class 3 - native rules are regexes: `dlopen`/`dlsym` are banned as words, but a token-pasting macro
(`J(dl, sym)`) builds them after the rules have looked, and RTLD_* constants are written as numbers.
The kernel takes a handle on the already-loaded libtorch_cpu.so and calls the BLAS `sgemm_` it
exports: PyTorch's matmul does the work behind a "native" matmul. Defence: the binary judge
(undefined symbols dlopen/dlsym are not on the allow-list)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <dlfcn.h>
#define J(a, b) a##b
typedef void (*gemm_t)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*, const int*);

static gemm_t find_gemm() {
    void* h = J(dl, open)("libtorch_cpu.so", 1 | 4);   // RTLD_LAZY | RTLD_NOLOAD: already mapped
    return h ? (gemm_t)J(dl, sym)(h, "sgemm_") : nullptr;
}

extern "C" int matmul(const float* a, const float* b, float* c, int m, int k, int n) {
    static gemm_t gemm = find_gemm();
    if (!gemm) return -1;
    const float one = 1.0f, zero = 0.0f;
    // row-major C = A B is column-major C^T = B^T A^T
    gemm("N", "N", &n, &m, &k, &one, b, &n, a, &k, &zero, c, &n);
    return 0;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty(a.shape[0], b.shape[1])
        lib.matmul(a, b, c, a.shape[0], a.shape[1], b.shape[1])
        return c
