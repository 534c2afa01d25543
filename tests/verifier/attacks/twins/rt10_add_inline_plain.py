"""Honest twin of c9_values/rt10_noncontig_input_ignored.py (red-team round 10): the same load_inline add,
with the glue making both inputs contiguous before the kernel reads them linearly.
Task: tests/verifier/attacks/tasks/rt10_add.py (16 x 4096).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor add_fwd(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_contiguous(), "a must be contiguous");
    torch::Tensor out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();  // strides of b never read
    float* po = out.data_ptr<float>();
    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
    return out;
}
"""

ext = load_inline(name="rt10_add_noncontig", cpp_sources=[CPP_SOURCE], functions=["add_fwd"],
                  extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.add_fwd(a.contiguous(), b.contiguous())
