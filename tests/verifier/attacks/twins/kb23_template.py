"""Honest twin of c9_values/kb23_near_zero.py, written by the template generator (its conservative draft at the
manifest's sizes). Template-generated kernel for 23_Conv3d_GroupNorm_Mean: stages conv -> groupnorm -> midreduce.

Schedule: conv_algo=direct, conv_ocb=4, gemm_kc=256, gemm_mc=96, gemm_mr=6, gemm_nc=1024, gemm_nr=32, gn_stats=two_pass, math=libm, mid_chunk=512, omp=static, unroll=1, vec=1
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""

#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>

#define EK_FAST 0



extern "C" void stage0(const float* __restrict X, const float* __restrict Wt, const float* __restrict Bias, float* __restrict C, int64_t NB, int64_t CI, int64_t ID, int64_t IH, int64_t IW, int64_t CO, int64_t OD, int64_t OH, int64_t OW, int64_t KD, int64_t KH, int64_t KW, int64_t SD, int64_t SH, int64_t SW, int64_t PD, int64_t PH, int64_t PW, int64_t DD, int64_t DH, int64_t DW, int64_t G, int64_t HAS_BIAS, int64_t F0, int64_t F1, int64_t F2, int64_t F3, int64_t F4) {
  const int64_t CIG = CI / G, COG = CO / G;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh) {
          float* row = C + ((n * CO + co) * OD + od) * OH * OW + oh * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            float acc = HAS_BIAS ? Bias[co] : 0.0f;
            for (int64_t ci = g * CIG; ci < (g + 1) * CIG; ++ci)
              for (int64_t kd = 0; kd < KD; ++kd) {
                const int64_t id = od * SD - PD + kd * DD;
                if (id < 0 || id >= ID) continue;
                for (int64_t kh = 0; kh < KH; ++kh) {
                  const int64_t ih = oh * SH - PH + kh * DH;
                  if (ih < 0 || ih >= IH) continue;
                  const float* xrow = X + (((n * CI + ci) * ID + id) * IH + ih) * IW;
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    const int64_t iw = ow * SW - PW + kw * DW;
                    if (iw < 0 || iw >= IW) continue;
                    acc += Wt[((((co) * CIG + (ci - g * CIG)) * KD + kd) * KH + kh) * KW + kw] * xrow[iw];
                  }
                }
              }
            row[ow] = acc;
          }
          
        }
    }
  (void)COG; (void)CIG;
}

extern "C" void stage1(const float* __restrict X, const float* __restrict Wt, const float* __restrict Bs, float* __restrict C, int64_t NB, int64_t CC, int64_t HW, int64_t G, float EPS, int64_t AFFINE, int64_t F0, int64_t F1, int64_t F2, int64_t F3, int64_t FN) {
  const int64_t cpg = CC / G;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < NB; ++n)
    for (int64_t gi = 0; gi < G; ++gi) {
      const int64_t cnt = cpg * HW;
      const float* xp = X + (n * CC + gi * cpg) * HW;
      float s = 0.0f;
      #pragma omp simd reduction(+:s)
      for (int64_t i = 0; i < cnt; ++i) s += xp[i];
      const float mean = s / (float)cnt;
      float v = 0.0f;
      #pragma omp simd reduction(+:v)
      for (int64_t i = 0; i < cnt; ++i) { const float d = xp[i] - mean; v += d * d; }
      const float var = v / (float)cnt;
      const float inv = 1.0f / sqrtf(var + EPS);
      for (int64_t c = gi * cpg; c < (gi + 1) * cpg; ++c) {
        const float sc = AFFINE ? inv * Wt[c] : inv;
        const float sh = AFFINE ? Bs[c] - mean * sc : -mean * sc;
        const float* src = X + (n * CC + c) * HW;
        float* dst = C + (n * CC + c) * HW;
        #pragma omp simd
        for (int64_t i = 0; i < HW; ++i) dst[i] = src[i] * sc + sh;
        for (int64_t h = 0; h < 60; ++h) {
          
        }
      }
    }
}

extern "C" void stage2(const float* __restrict X, float* __restrict Y, int64_t outer, int64_t L, int64_t inner) {
  const int64_t nch = (inner + 511) / 512;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < nch; ++c) {
      const int64_t i0 = c * 512;
      const int64_t w = std::min<int64_t>(512, inner - i0);
      double acc[512];  // double: a mean over many elements (a normalised tensor's is ~0) stays exact enough
      for (int64_t i = 0; i < w; ++i) acc[i] = 0.0f;
      for (int64_t l = 0; l < L; ++l) {
        const float* src = X + (o * L + l) * inner + i0;
        #pragma omp simd
        for (int64_t i = 0; i < w; ++i) { const float v = src[i]; acc[i] += v; }
      }
      float* dst = Y + o * inner + i0;
      for (int64_t i = 0; i < w; ++i) dst[i] = (float)(acc[i] / (double)L);
    }
}

"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        if tuple(x.shape) != (8, 3, 8, 12, 12):
            raise ValueError('this kernel was generated for x of shape (8, 3, 8, 12, 12), got ' + str(tuple(x.shape)))
        x = x.contiguous()
        w1 = self.conv.weight.contiguous()
        w2 = self.conv.bias.contiguous()
        w4 = self.group_norm.weight.contiguous()
        w5 = self.group_norm.bias.contiguous()
        t3 = torch.empty((8, 24, 6, 10, 10), dtype=torch.float32)
        lib.stage0(x, w1, w2, t3, 8, 3, 8, 12, 12, 24, 6, 10, 10, 3, 3, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 8, 24, 6, 10, 10)
        t6 = torch.empty((8, 24, 6, 10, 10), dtype=torch.float32)
        lib.stage1(t3, w4, w5, t6, 8, 24, 600, 8, 1e-05, 1, 8, 24, 6, 10, 10)
        t7 = torch.empty((8, 1, 1, 1, 1), dtype=torch.float32)
        lib.stage2(t6, t7, 8, 14400, 1)
        t8 = t7.view((8,))
        return t8
