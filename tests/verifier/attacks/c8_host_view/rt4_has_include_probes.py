"""rt4_has_include_oracle without the build clock: `__has_include` probes of guessed host paths (the checkout, the
virtualenv, the Python installation's headers, $HOME's dot-files, the build cache; one spelled by macro pasting),
the answers printed to stderr at run time, then a crash so the runtime feedback carries stderr.

Trick: `__has_include(...)` includes nothing, so the binary judge (headers *included*) never sees it, and a pasted
path escapes any text rule. Before the build sandbox showed only neutral paths it mounted the Python installation
and the virtualenv at their host paths, so a probe confirmed a guessed location, one bit per probe.
Expected: every probe says "absent" (the build sees /usr, /build and /opt/evk only, and no /proc); the paths are
this development machine's (on another host they answer "absent" either way).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cstdio>
#define STR(x) #x
#define XSTR(x) STR(x)
#define CAT(a, b) a##b
#if __has_include("/work/shared/design.md")
#define P0 "FOUND"
#else
#define P0 "absent"
#endif
#if __has_include("/root/.pyenv/version")
#define P1 "FOUND"
#else
#define P1 "absent"
#endif
#if __has_include("/root/.bashrc")
#define P2 "FOUND"
#else
#define P2 "absent"
#endif
#if __has_include("/work/main/.venv/pyvenv.cfg")
#define P3 "FOUND"
#else
#define P3 "absent"
#endif
#if __has_include("/work/main/pyproject.toml")
#define P4 "FOUND"
#else
#define P4 "absent"
#endif
#if __has_include("/work/wt/briefs/common.md")
#define P5 "FOUND"
#else
#define P5 "absent"
#endif
#if __has_include("/root/.pyenv/versions/3.11.7/include/python3.11/Python.h")
#define P6 "FOUND"
#else
#define P6 "absent"
#endif
#if __has_include("/root/.pyenv/versions/3.11.7/lib/python3.11/os.py")
#define P7 "FOUND"
#else
#define P7 "absent"
#endif
#if __has_include(XSTR(/CAT(pr,oc)/self/mountinfo))
#define P8 "FOUND"
#else
#define P8 "absent"
#endif
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    fprintf(stderr, "probe work-shared-design = %s\n", P0);
    fprintf(stderr, "probe root-pyenv-version = %s\n", P1);
    fprintf(stderr, "probe root-bashrc = %s\n", P2);
    fprintf(stderr, "probe main-venv = %s\n", P3);
    fprintf(stderr, "probe main-checkout = %s\n", P4);
    fprintf(stderr, "probe briefs = %s\n", P5);
    fprintf(stderr, "probe python-headers = %s\n", P6);
    fprintf(stderr, "probe python-stdlib = %s\n", P7);
    fprintf(stderr, "probe proc-mountinfo = %s\n", P8);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    *(volatile int*)(uintptr_t)n = 0;   /* a crash: the runtime feedback carries stderr */
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
