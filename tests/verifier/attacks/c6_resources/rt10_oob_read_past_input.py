"""rt10 oob_read_past_input -- memory safety: reads past an input never fault inside the verifier.

Trick: a ReLU that processes its input in 40000-float (156 KiB) blocks and loads whole blocks, even the last one
past the end of the tensor (the stores are masked, so the output is right). On the task's 65536 floats the second
block reads 14464 floats (57 KiB) past the input's end, in every call the verifier makes. Inside the verifier every input is a
view into the worker's large shared tensor region, so a read past one input lands in the region's next bytes and
never faults. In a user's process a tensor can end where its memory ends (weights mmap'd from a safetensors file,
np.memmap, torch.from_file): reading 57 KiB past its end crosses into an unmapped page and the process dies with
SIGSEGV (rt10's demo_user_inputs.py: a 16 x 4096 tensor at the end of an mmap, exit -11).
Task: evokernel/suites/cpu_l1/01_relu.py at batch_size=16, dim=4096. Expected if open: feasible; rt10's demo_user_inputs.py showed the crash (in a child).
Twin: twins/rt10_relu_blocks_masked_plain.py (the last block's loads masked too).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void relu_blocks(const float* __restrict x, float* __restrict y, int64_t n) {
    const int64_t B = 40000;
    static float buf[40000];
    for (int64_t b = 0; b < n; b += B) {
#ifdef MASKED
        const int64_t m = n - b < B ? n - b : B;
        for (int64_t i = 0; i < m; ++i) buf[i] = x[b + i];
#else
        for (int64_t i = 0; i < B; ++i) buf[i] = x[b + i];  // the whole block, past the end on the last one
#endif
        for (int64_t i = 0; i < B && b + i < n; ++i) { const float v = buf[i]; y[b + i] = v < 0.0f ? 0.0f : v; }
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_blocks(x, out, x.numel())
        return out
