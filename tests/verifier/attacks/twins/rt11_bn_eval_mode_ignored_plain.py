"""Honest twin of rt11_bn_eval_mode_ignored.py: the running statistics are used when not self.training.

TASK: tests/verifier/attacks/tasks/rt11_batchnorm1d.py
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

// y = (x - mean) / sqrt(var + eps) * w + b over the batch; running stats updated with momentum (unbiased var)
extern "C" void bn_train(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                         float* __restrict rm, float* __restrict rv, int64_t* __restrict nbt,
                         float* __restrict y, int64_t n, int64_t c, double eps, double momentum) {
    for (int64_t j = 0; j < c; ++j) {
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i) s += x[i * c + j];
        const double mean = s / n;
        double q = 0.0;
        for (int64_t i = 0; i < n; ++i) { const double d = x[i * c + j] - mean; q += d * d; }
        const double var = q / n;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i) y[i * c + j] = (float)((x[i * c + j] - mean) * inv * w[j] + b[j]);
        rm[j] = (float)((1.0 - momentum) * rm[j] + momentum * mean);
        rv[j] = (float)((1.0 - momentum) * rv[j] + momentum * (n > 1 ? q / (n - 1) : var));
    }
    nbt[0] += 1;
}

extern "C" void bn_eval(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                        const float* __restrict rm, const float* __restrict rv, float* __restrict y,
                        int64_t n, int64_t c, double eps) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < c; ++j)
            y[i * c + j] = (float)((x[i * c + j] - rm[j]) / std::sqrt((double)rv[j] + eps) * w[j] + b[j]);
}
"""

lib = load_cpp(CPP_SOURCE)
EVAL_IGNORED = False


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        bn = self.bn
        if self.training or EVAL_IGNORED:
            lib.bn_train(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.num_batches_tracked, out,
                         x.shape[0], x.shape[1], bn.eps, bn.momentum)
        else:
            lib.bn_eval(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, out, x.shape[0], x.shape[1], bn.eps)
        return out

