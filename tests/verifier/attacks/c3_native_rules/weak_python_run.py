"""Class 3 - native rules are regexes: CPython's API is banned as `Py...(`, but weak declarations with
token-pasted names link under `--no-undefined` and resolve at load time to the interpreter's own
symbols. The "kernel" takes the GIL and runs Python that wraps the raw pointers as tensors and calls
`torch.relu` with the verifier's dispatch modes disabled: PyTorch does the work, nothing records it.
Defence: the binary judge (no Python symbols, weak or not)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdio>
#define P(x) Py##x
extern "C" {
int P(GILState_Ensure)(void) __attribute__((weak));
void P(GILState_Release)(int) __attribute__((weak));
int P(Run_SimpleString)(const char*) __attribute__((weak));
}

extern "C" int relu(const float* x, float* y, int64_t n) {
    if (!P(Run_SimpleString)) return -1;
    char code[1024];
    snprintf(code, sizeof code,
             "import ctypes, torch\n"
             "from torch.utils._python_dispatch import _disable_current_modes\n"
             "with _disable_current_modes():\n"
             "    x = torch.frombuffer((ctypes.c_float * %lld).from_address(%llu), dtype=torch.float32)\n"
             "    y = torch.frombuffer((ctypes.c_float * %lld).from_address(%llu), dtype=torch.float32)\n"
             "    torch.clamp(x, min=0, out=y)\n",
             (long long)n, (unsigned long long)(uintptr_t)x, (long long)n, (unsigned long long)(uintptr_t)y);
    int g = P(GILState_Ensure)();
    int rc = P(Run_SimpleString)(code);
    P(GILState_Release)(g);
    return rc;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
