"""rt3 class 6 (host information in feedback) through a class-3 door: str.format's field names walk attributes.

The trick: the glue checker types `"...".format(...)` as a string method and never looks inside the format
string, whose replacement fields are attribute and index walks (`{0.__file__[3]}`): private and dunder
attributes the checker refuses everywhere else. `"{0.__file__[0]}|{0.__file__[1]}|..."`.format(torch)` spells
torch's install path -- under the project checkout's virtualenv -- one character at a time, and an exception
raised with it lands in the verdict's feedback. The host-text scrubber replaces whole path prefixes only; a
path interleaved with separators passes it.

Expected: the checkout's host path recoverable from the feedback. Verifier answered: see attacks/run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

N = 48
FMT = "|".join(["{0.__file__[%d]}" % i for i in range(N)])

CPP = r"""
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
"""
lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("layout " + FMT.format(torch))

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu_forward(x.contiguous(), out, x.numel())
        return out
