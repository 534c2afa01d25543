"""rt5 c2: the value checks are front-loaded: a kernel careful during its first 14 calls, sloppy ever after.

Trick: every trial that plants values random draws never give (`special`: exact zeros, 1e6-1e8, constant rows; the
perturbed-parameter trial on the same inputs; the opt-in `nonfinite`) runs in a fixed order before the timing, and
the timed and audit rounds draw plain inputs. Native code may keep a static call counter (nothing can refuse
that), so a softmax that subtracts the row max only in its first 14 calls -- covering all 10 trials -- and then
drops that pass (exp overflows for inputs beyond ~88: Inf/Inf = NaN) is correct on everything the verifier ever
compares, and wrong for valid inputs in every later use. Its twin (always sloppy) shows the special trial would
catch the sloppy path. Expected: correctness (if the door were closed). Verifier: see run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

META = {"task": "evokernel/suites/cpu_l1/11_softmax.py", "set": {"batch_size": 256, "dim": 1024}, "twin": "twin_softmax_always_sloppy.py"}

SRC = r"""
#include <cstdint>
#include <cmath>
static long calls = 0;
extern "C" void softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
    ++calls;
    const bool careful = calls <= 14;
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * n;
        float* q = y + r * n;
        float m = 0.0f;
        if (careful) { m = p[0]; for (int64_t i = 1; i < n; ++i) m = p[i] > m ? p[i] : m; }
        float s = 0.0f;
        for (int64_t i = 0; i < n; ++i) { q[i] = std::exp(p[i] - m); s += q[i]; }
        const float inv = 1.0f / s;
        for (int64_t i = 0; i < n; ++i) q[i] *= inv;
    }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.softmax_rows(x, y, x.shape[0], x.shape[1])
        return y
