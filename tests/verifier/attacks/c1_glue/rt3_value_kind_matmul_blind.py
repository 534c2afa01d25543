"""rt3 class 3 (glue allow-list): a load_inline function called in __init__ is a "plain value" to the checker.

The trick: in `__init__` a call of the native library returns VALUE (the checker assumes a native call made
there returns a number), but a `load_inline` function returns a real `torch::Tensor`. Stored as `self.a`, that
tensor is a VALUE in `forward`, where arithmetic on plain values is allowed: `self.a @ self.b` is PyTorch's
matmul, accepted by the static allow-list. A native `stash()` makes `self.a`/`self.b` alias the call's inputs
(`set_`, an allowed "copy/view" operator), and a native `identity()` turns the VALUE result back into something
`forward` may return. The operator recorder (the dynamic tripwire) would see `aten::mm` in checked calls, so the
first `stash()` also leaks a `c10::impl::ExcludeDispatchKeyGuard` on the Python dispatch keys -- named without its
banned token, as `decltype(at::AutoNonVariableTypeMode::autograd_guard_)`, the key names pasted (`a##b`) past
the text rule -- which leaves the thread's TLS with the
Python keys excluded: no TorchDispatchMode (the recorder) sees any operator afterwards.

Expected: feasible, with PyTorch's own matmul computing every output (speedup ~1x: it *is* eager).
Verifier answered: see attacks/run.py's table (FEASIBLE at 1.0x when run on 2026-11-28).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

#define EVK_CAT(a, b) a##b
using KeyGuard = decltype(at::AutoNonVariableTypeMode::autograd_guard_);
using Keys = c10::EVK_CAT(Dispatch, KeySet);
using Key = c10::EVK_CAT(Dispatch, Key);

torch::Tensor make_slot(int64_t n) { return torch::empty({n}); }

torch::Tensor stash(torch::Tensor src, torch::Tensor slot) {
    static KeyGuard* blind = nullptr;
    if (blind == nullptr)  // never destroyed: the exclusion outlives this call
        // Python and the key after DeferredInit (PythonTLSSnapshot, a banned token when spelled)
        blind = new KeyGuard(Keys(Key::Python) |
                             Keys(static_cast<Key>(static_cast<uint8_t>(Key::DeferredInit) + 1)));
    slot.set_(src);
    return slot;
}

torch::Tensor identity(torch::Tensor t) { return t; }
"""

ext = load_inline(name="rt3_value_kind", cpp_sources=[CPP], functions=["make_slot", "stash", "identity"],
                  extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ext.make_slot(1)  # a tensor, typed "plain value" by the glue checker
        self.b = ext.make_slot(1)

    def forward(self, a, b):
        ext.stash(a.contiguous(), self.a)
        ext.stash(b.contiguous(), self.b)
        return ext.identity(self.a @ self.b)
