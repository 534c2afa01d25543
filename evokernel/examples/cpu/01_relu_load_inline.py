"""ReLU in KernelBench's style: a C++ extension built with torch.utils.cpp_extension.load_inline.

Task: evokernel/suites/cpu_l1/01_relu.py. The extension allocates its output with torch::empty_like
(an allocation, which the verifier allows) and computes every element itself from the raw float
pointers; it calls no ATen compute operator.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "relu_forward: expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_forward: expected float32");
    TORCH_CHECK(x.is_contiguous(), "relu_forward: expected a contiguous tensor");
    torch::Tensor out = torch::empty_like(x);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = src[i];
        dst[i] = v < 0.0f ? 0.0f : v;
    }
    return out;
}
"""

ext = load_inline(
    name="evokernel_example_relu",
    cpp_sources=[CPP_SOURCE],
    functions=["relu_forward"],
    extra_cflags=["-O3", "-march=native"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_forward(x.contiguous())
