"""Class 2 - only checked calls are watched, and only on the calling thread: the operator recorder is a
thread-local dispatch mode, so `torch::relu` called from a thread the load_inline extension starts
itself (`using namespace std; thread`, which the `std::thread` text rule does not see) is invisible
to it, in checked calls too. Defences: the binary judge (no ATen compute and no thread creation in
native code); every thread's operators observed."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <thread>
using namespace std;

torch::Tensor relu_side(torch::Tensor x) {
    torch::Tensor out;
    thread t([&] { out = torch::relu(x); });
    t.join();
    return out;
}
"""

ext = load_inline(name="evk_attack_side_thread", cpp_sources=[CPP_SOURCE], functions=["relu_side"],
                  extra_cflags=["-O1"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_side(x.contiguous())
