"""Sigmoid, y = 1 / (1 + exp(-x)): 16 elements at a time with a polynomial exp (Cephes expf, ~1 ulp)
in vector registers; blocks of the tensor are shared out over OpenMP threads.

Task: evokernel/suites/cpu_l1/04_sigmoid.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t v16i __attribute__((vector_size(64)));

static inline v16 splat(float v) { return v16{} + v; }

// exp of 16 floats (GCC vector extensions: one AVX-512 register, or two AVX2 ones): x = n ln2 + r with
// |r| <= ln2/2, the Cephes expf polynomial for e^r (~1 ulp), times 2^n built in the exponent bits.
static inline v16 vexp(v16 x) {
    const v16 lo = splat(-87.3f), hi = splat(88.3f);
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    const v16 magic = splat(12582912.0f);  // 1.5 * 2^23: adding and subtracting it rounds to an integer
    const v16 n = (x * 1.44269504088896341f + magic) - magic;
    v16 r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    const v16 z = r * r;
    v16 p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    const v16i bits = (__builtin_convertvector(n, v16i) + 127) << 23;
    return p * (v16)bits;
}

extern "C" void sigmoid_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    const int64_t nv = n / 16;
    const v16 one = splat(1.0f);
    #pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nv; ++b) {
        const v16 v = *(const v16u*)(x + 16 * b);
        *(v16u*)(y + 16 * b) = one / (one + vexp(-v));
    }
    if (nv * 16 < n) {  // tail: pad to a full vector
        float buf[16] = {0};
        for (int64_t i = nv * 16; i < n; ++i) buf[i - nv * 16] = x[i];
        const v16 r = one / (one + vexp(-*(const v16u*)buf));
        for (int64_t i = nv * 16; i < n; ++i) y[i] = r[i - nv * 16];
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
        lib.sigmoid_forward(x, out, x.numel())
        return out
