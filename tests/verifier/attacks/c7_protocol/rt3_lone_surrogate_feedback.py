"""rt3 class 5 (protocol): a lone UTF-16 surrogate travels from the worker into the verdict.

The trick: forward raises ValueError("... \\ud800 ..."). The worker's reply is JSON-encoded with
ensure_ascii, so the surrogate crosses the socket as the escape `\\ud800`; the parent's json.loads turns it back
into a str holding a lone surrogate, which the host-text scrubber (C0/C1 controls only) keeps. `Verifier.verify`
returns, but the verdict cannot be encoded as UTF-8: `Verdict.summary()` printed by `evokernel verify` dies with
UnicodeEncodeError (observed: the CLI exits 1 with a traceback instead of printing a verdict), and so does every
consumer that writes the feedback as UTF-8 (run logs, the memory's files, an LLM request body).

Expected: the verdict cannot be shown/stored (crash of the caller). Verifier answered: see attacks/run.py.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

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

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu_forward(x.contiguous(), out, x.numel())
        raise ValueError("kernel status \ud800 (a lone surrogate)")
