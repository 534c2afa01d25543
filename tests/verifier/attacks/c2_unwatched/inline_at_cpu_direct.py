"""Class 2 - only dispatched calls are watched: `at::cpu::clamp_min` is ATen's structured CPU kernel
called directly, without going through the dispatcher, so the operator recorder (a dispatch mode)
never sees it in any call, checked or timed. The inline rules ban `at::native` and `redispatch`, not
`at::cpu`. Defence: the binary judge (no ATen compute symbols in native code)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <ATen/CPUFunctions.h>

torch::Tensor relu_direct(torch::Tensor x) {
    return at::cpu::clamp_min(x, 0);
}
"""

ext = load_inline(name="evk_attack_at_cpu", cpp_sources=[CPP_SOURCE], functions=["relu_direct"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_direct(x.contiguous())
