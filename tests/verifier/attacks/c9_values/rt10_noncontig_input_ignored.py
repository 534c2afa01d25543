"""rt10 noncontig_input_ignored -- value coverage: trial inputs are always contiguous.

Trick: a load_inline kernel reads `b.data_ptr<float>()` linearly, ignoring strides, and the glue does not call
`.contiguous()` on `b`. (load_cpp refuses a non-contiguous tensor at the call, so there this bug is a clear error;
load_inline code gets no such check.) Every trial and timed round draws contiguous inputs, so the kernel never
sees a transposed or sliced `b`; a user's `model(a, y.t())` silently gets a + y (not a + y.t()).
Task: tests/verifier/attacks/tasks/rt10_add.py (16 x 4096). Was feasible; closed: the scale trial passes b as a
transposed copy's transpose, the negate trial as padded rows (trial_inputs.STRIDED_IN): refused in the scale trial.
Twin: twins/rt10_add_inline_plain.py (calls .contiguous() on b).
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
        return ext.add_fwd(a.contiguous(), b)
