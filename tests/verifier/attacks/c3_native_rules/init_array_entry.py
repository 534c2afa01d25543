"""Class 3 - native rules are regexes: besides `__attribute__((constructor))`, a load-time initialiser
can be planted as a plain function pointer in the `.init_array` section, which no text rule
mentions. It runs when the library is loaded; here it takes the GIL through weak-declared, token-
pasted CPython symbols and swaps the worker's OpRecorder class for one that records nothing, so
forward computes with `x.clamp(min=0)` next to a decoy native call. Defence: the binary judge (no
initialisers of the candidate's own, no Python symbols)."""
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#define P(x) Py##x
extern "C" {
int P(GILState_Ensure)(void) __attribute__((weak));
void P(GILState_Release)(int) __attribute__((weak));
int P(Run_SimpleString)(const char*) __attribute__((weak));
}

static void at_load(void) {
    if (!P(Run_SimpleString)) return;
    int g = P(GILState_Ensure)();
    P(Run_SimpleString)(
        "import sys\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "class Blind(TorchDispatchMode):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.calls, self.violations = {}, {}\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n"
        "w = sys.modules.get('evokernel.verifier.sandboxed.worker')\n"
        "if w is not None: w.OpRecorder = Blind\n");
    P(GILState_Release)(g);
}
static void (*const planted)(void) __attribute__((section(".init_array"), used)) = at_load;

extern "C" int touch(int v) { return v + 1; }
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        lib.touch(1)
        return x.clamp(min=0)
