"""Dense C = A @ B (A: M x K, B: K x N, float32) with a packed, cache-blocked GEMM whose 8 x 32
micro-kernel keeps the C tile in vector registers (GCC vector extensions: AVX-512 where available,
split into narrower vectors elsewhere). M blocks are shared out over OpenMP threads.

Task: evokernel/suites/cpu_l1/15_matmul.py (2-D operands).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>

// Blocking (BLIS style): C tiles of MR x NR held in registers; A blocks of MC x KC packed per thread
// (L2); B blocks of KC x NC packed once per K block and shared by all threads.
#define MR 8
#define NR 32
#define KC 256
#define MC 128
#define NC 1024

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));

// pack rows [i0, i0+mc) x cols [p0, p0+kc) of A (row-major, lda) into MR-row panels: Ap[panel][k][MR]
static void pack_a(const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* Ap) {
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int64_t mr = std::min<int64_t>(MR, mc - ip);
        float* dst = Ap + ip * kc;
        for (int64_t i = 0; i < mr; ++i) {
            const float* src = A + (i0 + ip + i) * lda + p0;
            for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = src[k];
        }
        for (int64_t i = mr; i < MR; ++i)
            for (int64_t k = 0; k < kc; ++k) dst[k * MR + i] = 0.0f;
    }
}

// pack one NR-column panel of B (rows [p0,p0+kc), cols [j0, j0+nr)) into Bp[k][NR]
// trans_b == 0: B is (K, N) row-major, element (k, j) at B[k*ldb + j]
// trans_b == 1: B is (N, K) row-major (a Linear weight), element (k, j) at B[j*ldb + k]
static void pack_b_panel(const float* B, int64_t ldb, int trans_b, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float* Bp) {
    if (!trans_b) {
        for (int64_t k = 0; k < kc; ++k) {
            const float* src = B + (p0 + k) * ldb + j0;
            float* dst = Bp + k * NR;
            int64_t j = 0;
            for (; j < nr; ++j) dst[j] = src[j];
            for (; j < NR; ++j) dst[j] = 0.0f;
        }
    } else {
        for (int64_t j = 0; j < nr; ++j) {
            const float* src = B + (j0 + j) * ldb + p0;
            for (int64_t k = 0; k < kc; ++k) Bp[k * NR + j] = src[k];
        }
        for (int64_t j = nr; j < NR; ++j)
            for (int64_t k = 0; k < kc; ++k) Bp[k * NR + j] = 0.0f;
    }
}

// C tile (mr x nr at C, ldc) = (first ? 0 : C) + Ap panel * Bp panel; on the last K block add bias / relu
static inline void micro_kernel(int64_t kc, const float* __restrict Ap, const float* __restrict Bp, float* C,
                                int64_t ldc, int64_t mr, int64_t nr, bool first, bool last,
                                const float* bias, int relu) {
    v16 c0[MR], c1[MR];
    const bool full = (mr == MR && nr == NR);
    if (first) {
        for (int i = 0; i < MR; ++i) { c0[i] = v16{} ; c1[i] = v16{}; }
    } else if (full) {
        for (int i = 0; i < MR; ++i) {
            c0[i] = *(const v16u*)(C + i * ldc);
            c1[i] = *(const v16u*)(C + i * ldc + 16);
        }
    } else {
        float tmp[MR][NR] = {};
        for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j) tmp[i][j] = C[i * ldc + j];
        for (int i = 0; i < MR; ++i) {
            c0[i] = *(const v16u*)(&tmp[i][0]);
            c1[i] = *(const v16u*)(&tmp[i][16]);
        }
    }
    for (int64_t k = 0; k < kc; ++k) {
        const v16 b0 = *(const v16*)(Bp + k * NR);
        const v16 b1 = *(const v16*)(Bp + k * NR + 16);
        const float* a = Ap + k * MR;
        for (int i = 0; i < MR; ++i) {
            c0[i] += a[i] * b0;
            c1[i] += a[i] * b1;
        }
    }
    if (last && (bias || relu)) {
        v16 bb0 = v16{}, bb1 = v16{};
        if (bias) {
            float bt[NR] = {};
            for (int64_t j = 0; j < nr; ++j) bt[j] = bias[j];
            bb0 = *(const v16u*)(&bt[0]);
            bb1 = *(const v16u*)(&bt[16]);
        }
        const v16 zero = v16{};
        for (int i = 0; i < MR; ++i) {
            c0[i] += bb0; c1[i] += bb1;
            if (relu) { c0[i] = c0[i] > zero ? c0[i] : zero; c1[i] = c1[i] > zero ? c1[i] : zero; }
        }
    }
    if (full) {
        for (int i = 0; i < MR; ++i) {
            *(v16u*)(C + i * ldc) = c0[i];
            *(v16u*)(C + i * ldc + 16) = c1[i];
        }
    } else {
        float tmp[MR][NR];
        for (int i = 0; i < MR; ++i) {
            *(v16u*)(&tmp[i][0]) = c0[i];
            *(v16u*)(&tmp[i][16]) = c1[i];
        }
        for (int64_t i = 0; i < mr; ++i)
            for (int64_t j = 0; j < nr; ++j) C[i * ldc + j] = tmp[i][j];
    }
}

// C (M x N, row-major) = A (M x K) @ op(B) [+ bias] [relu]
static void gemm(const float* A, const float* B, float* C, int64_t M, int64_t N, int64_t K, int trans_b,
                 const float* bias, int relu) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                float v = bias ? bias[j] : 0.0f;
                C[i * N + j] = (relu && v < 0.0f) ? 0.0f : v;
            }
        return;
    }
    const int64_t ldb = trans_b ? K : N;
    const int64_t nc_max = std::min<int64_t>(NC, (N + NR - 1) / NR * NR);
    const int64_t kc_max = std::min<int64_t>(KC, K);
    float* Bp = (float*)std::aligned_alloc(64, (size_t)(nc_max * kc_max * sizeof(float) + 64) / 64 * 64);
    #pragma omp parallel
    {
        const int64_t mc_max = std::min<int64_t>(MC, (M + MR - 1) / MR * MR);
        float* Ap = (float*)std::aligned_alloc(64, (size_t)(mc_max * kc_max * sizeof(float) + 64) / 64 * 64);
        for (int64_t jc = 0; jc < N; jc += NC) {
            const int64_t nc = std::min<int64_t>(NC, N - jc);
            const int64_t npanels = (nc + NR - 1) / NR;
            for (int64_t pc = 0; pc < K; pc += KC) {
                const int64_t kc = std::min<int64_t>(KC, K - pc);
                const bool first = pc == 0, last = pc + kc >= K;
                #pragma omp for schedule(static)
                for (int64_t jp = 0; jp < npanels; ++jp)
                    pack_b_panel(B, ldb, trans_b, pc, kc, jc + jp * NR, std::min<int64_t>(NR, nc - jp * NR),
                                 Bp + jp * NR * kc);
                #pragma omp for schedule(dynamic, 1)
                for (int64_t ic = 0; ic < M; ic += MC) {
                    const int64_t mc = std::min<int64_t>(MC, M - ic);
                    pack_a(A, K, ic, mc, pc, kc, Ap);
                    for (int64_t jp = 0; jp < npanels; ++jp) {
                        const int64_t j0 = jc + jp * NR;
                        const int64_t nr = std::min<int64_t>(NR, N - j0);
                        for (int64_t ip = 0; ip < mc; ip += MR) {
                            const int64_t mr = std::min<int64_t>(MR, mc - ip);
                            micro_kernel(kc, Ap + ip * kc, Bp + jp * NR * kc, C + (ic + ip) * N + j0, N, mr, nr,
                                         first, last, bias ? bias + j0 : nullptr, relu);
                        }
                    }
                }
            }
        }
        std::free(Ap);
    }
    std::free(Bp);
}

extern "C" void matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
    gemm(a, b, c, m, n, k, 0, nullptr, 0);
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        out = torch.empty(m, n, dtype=a.dtype)
        lib.matmul(a, b, out, m, n, k)
        return out
