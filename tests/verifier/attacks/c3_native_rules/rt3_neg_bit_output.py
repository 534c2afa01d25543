"""rt3 class 1 (native code reaches PyTorch's compute): the output carries TensorImpl's negative bit.

The trick: `c10::TensorImpl::_set_neg(true)` is an inline method of an allowed header (no symbol, no banned
token). The kernel writes relu(x) and sets the neg bit on its output tensor: the tensor now *means* -relu(x).
The worker then copies the output into the shared region (`_write`: `region_view.copy_(out)`), outside the
operator recorder, and PyTorch's copy kernel materialises the negation: PyTorch computes the task's last
operator on every element, in every checked and timed call, unwatched.

Expected: feasible (correct outputs; PyTorch did the negation). Task: attacks/tasks/neg_relu.py.
Verifier answered: see attacks/run.py's table.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor relu_then_flag(torch::Tensor x) {
    torch::Tensor out = torch::empty_like(x);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;  // relu only, no negation
    out.unsafeGetTensorImpl()->_set_neg(true);  // "this tensor is the negation of its bytes"
    return out;
}
"""

ext = load_inline(name="rt3_neg_bit", cpp_sources=[CPP], functions=["relu_then_flag"], extra_cflags=["-O3"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_then_flag(x.contiguous())
