"""Eight module-level load_cpp builds of 60 MiB each: one verdict leaves ~480 MiB in the build cache.

CLASS: c8_sandbox
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16 dim=4096
BACKEND: cpu
SUCCESS: disk_growth:400
NEW: yes (variant of rt7_cache_filler)

Trick: as rt7_cache_filler_60mb_library, multiplied: nothing bounds the number of native libraries a candidate
builds at import (only their shared build-time budget, 600 s), and each is cached forever. Eight 60 MiB
libraries cost the compiler a few seconds each and leave ~480 MiB per verdict (with sixteen or more, gigabytes
per verdict); the candidate still passes as an honest ReLU.
Expected: feasible, and >= 400 MiB left in the (private) cache.
Answered (2026-11-29, attacks/run.py): FEASIBLE; the private cache held 480 MiB after one verdict. SUCCEEDED.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib0 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob0[60u << 20] = {1};
extern "C" int64_t touch0(int64_t i) { return rt7_blob0[i & 1023]; }
""")
lib1 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob1[60u << 20] = {2};
extern "C" int64_t touch1(int64_t i) { return rt7_blob1[i & 1023]; }
""")
lib2 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob2[60u << 20] = {3};
extern "C" int64_t touch2(int64_t i) { return rt7_blob2[i & 1023]; }
""")
lib3 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob3[60u << 20] = {4};
extern "C" int64_t touch3(int64_t i) { return rt7_blob3[i & 1023]; }
""")
lib4 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob4[60u << 20] = {5};
extern "C" int64_t touch4(int64_t i) { return rt7_blob4[i & 1023]; }
""")
lib5 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob5[60u << 20] = {6};
extern "C" int64_t touch5(int64_t i) { return rt7_blob5[i & 1023]; }
""")
lib6 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob6[60u << 20] = {7};
extern "C" int64_t touch6(int64_t i) { return rt7_blob6[i & 1023]; }
""")
lib7 = load_cpp(r"""
#include <cstdint>
unsigned char rt7_blob7[60u << 20] = {8};
extern "C" int64_t touch7(int64_t i) { return rt7_blob7[i & 1023]; }
""")

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
