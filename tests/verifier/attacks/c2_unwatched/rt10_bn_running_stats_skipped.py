"""rt10 bn_running_stats_skipped -- value coverage of side effects: state the reference mutates is never compared.

Trick: a training-mode BatchNorm's forward returns the batch-normalised x *and* updates running_mean,
running_var and num_batches_tracked in place. The verifier compares returned outputs (and that inputs are
unchanged), never the model's buffers after a call, so a kernel that skips the running-statistics update is
feasible -- and every model trained with it evaluates (eval()) with running_mean 0 / running_var 1 forever.
Task: tests/verifier/attacks/tasks/rt10_bn_train.py (256 x 64). Expected if open: feasible.
Twin: twins/rt10_bn_train_plain.py (the same kernel, updating the three buffers as torch does).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void bn_train(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                         float* __restrict rmean, float* __restrict rvar, int64_t* __restrict tracked,
                         float* __restrict y, int64_t n, int64_t c, double eps, double momentum) {
    for (int64_t j = 0; j < c; ++j) {
        double s = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < n; ++i) s += x[i * c + j];
        const double mean = s / n;
        for (int64_t i = 0; i < n; ++i) { const double d = x[i * c + j] - mean; s2 += d * d; }
        const double var = s2 / n;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i)
            y[i * c + j] = (float)((x[i * c + j] - mean) * inv * w[j] + b[j]);
#ifdef UPDATE_RUNNING
        rmean[j] = (float)((1.0 - momentum) * rmean[j] + momentum * mean);
        rvar[j] = (float)((1.0 - momentum) * rvar[j] + momentum * (s2 / (n - 1)));
#endif
    }
#ifdef UPDATE_RUNNING
    tracked[0] += 1;
#endif
}

// eval(): the running statistics (every verdict's first plain trial runs the models in eval mode)
extern "C" void bn_eval(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                        const float* __restrict rmean, const float* __restrict rvar, float* __restrict y,
                        int64_t n, int64_t c, double eps) {
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < c; ++j)
            y[i * c + j] = (float)((x[i * c + j] - rmean[j]) / std::sqrt((double)rvar[j] + eps) * w[j] + b[j]);
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if not self.training:
            lib.bn_eval(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var, out,
                        x.shape[0], x.shape[1], self.bn.eps)
            return out
        lib.bn_train(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var,
                     self.bn.num_batches_tracked, out, x.shape[0], x.shape[1], self.bn.eps, self.bn.momentum)
        return out
