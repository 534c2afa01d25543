"""rt4: PyTorch's copy kernel negates for the candidate: the neg bit set on the SOURCE of an allowed copy_.

Trick: rt3_neg_bit_output set the neg bit on a returned output; the worker now refuses flagged outputs. But
the flag works wherever PyTorch reads the tensor: native code takes `at::alias(x)` (an allowed view op), sets the
alias's neg bit with the inline `TensorImpl::_set_neg(true)` (no symbol, no listed name), and `copy_`s it into a
fresh buffer: a whole tensor into a whole tensor of the same shape, so the data-movement rule is satisfied, and
the copy kernel writes -x. The native loop then only clamps at 0. PyTorch did the negation.
Expected: feasible with PyTorch computing -x (half of relu(-x)); the op recorder sees only alias and copy_.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor neg_relu(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous(), "contiguous input expected");
    torch::Tensor a = at::alias(x);
    a.unsafeGetTensorImpl()->_set_neg(true);
    torch::Tensor buf = torch::empty_like(x);
    buf.copy_(a);                       // PyTorch writes -x here
    torch::Tensor out = torch::empty_like(x);
    const float* s = buf.data_ptr<float>();
    float* d = out.data_ptr<float>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] < 0.0f ? 0.0f : s[i];
    return out;
}
"""

ext = load_inline(
    name="rt4_neg_bit_copy_source",
    cpp_sources=[CPP_SOURCE],
    functions=["neg_relu"],
    extra_cflags=["-O2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.neg_relu(x.contiguous())
