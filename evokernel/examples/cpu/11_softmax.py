"""Softmax over the last dimension. Per row (in L1): the maximum, e = exp(x - max) stored and summed,
then a scale by 1/sum; 16 elements at a time in vector registers with a polynomial exp (Cephes expf,
~1 ulp). Rows are shared out over OpenMP threads.

Task: evokernel/suites/cpu_l1/11_softmax.py (dim=-1; any leading shape).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

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

static inline float sexp(float x) { return vexp(splat(x))[0]; }

extern "C" void softmax_lastdim(const float* __restrict x, float* __restrict y, int64_t rows, int64_t n) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        const int64_t nv = n / 16 * 16;
        // 1. row maximum
        v16 vm = splat(-INFINITY);
        for (int64_t i = 0; i < nv; i += 16) {
            const v16 v = *(const v16u*)(xr + i);
            vm = v > vm ? v : vm;
        }
        float m = -INFINITY;
        for (int l = 0; l < 16; ++l) m = vm[l] > m ? vm[l] : m;
        for (int64_t i = nv; i < n; ++i) m = xr[i] > m ? xr[i] : m;
        // 2. e = exp(x - max), stored and summed (two accumulators, two exps in flight)
        const v16 vmax = splat(m);
        v16 s0 = v16{}, s1 = v16{};
        int64_t i = 0;
        for (; i + 32 <= nv; i += 32) {
            const v16 e0 = vexp(*(const v16u*)(xr + i) - vmax);
            const v16 e1 = vexp(*(const v16u*)(xr + i + 16) - vmax);
            *(v16u*)(yr + i) = e0;
            *(v16u*)(yr + i + 16) = e1;
            s0 += e0;
            s1 += e1;
        }
        for (; i < nv; i += 16) {
            const v16 e0 = vexp(*(const v16u*)(xr + i) - vmax);
            *(v16u*)(yr + i) = e0;
            s0 += e0;
        }
        s0 += s1;
        float s = 0.0f;
        for (int l = 0; l < 16; ++l) s += s0[l];
        for (int64_t j = nv; j < n; ++j) {
            const float e = sexp(xr[j] - m);
            yr[j] = e;
            s += e;
        }
        // 3. normalise
        const float inv = 1.0f / s;
        const v16 vinv = splat(inv);
        for (int64_t j = 0; j < nv; j += 16) *(v16u*)(yr + j) = *(const v16u*)(yr + j) * vinv;
        for (int64_t j = nv; j < n; ++j) yr[j] *= inv;
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
        n = x.shape[-1]
        rows = x.numel() // n if n > 0 else 0
        lib.softmax_lastdim(x, out, rows, n)
        return out
