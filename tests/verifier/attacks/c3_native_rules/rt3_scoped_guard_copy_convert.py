"""rt3 variant (fix28a): rt3_blind_copy_convert with the key guard *scoped* inside the native call.

The trick: the same `c10::impl::ExcludeDispatchKeyGuard` on the Python keys (type named through decltype, key
names token-pasted), but on the stack: it is destroyed before the function returns, so the thread's dispatch
key sets read the same before and after the call and the worker's dispatch-state check (sandboxed/dispatch_tls.py)
sees nothing. Inside the scope `out.copy_(x)` -- PyTorch's float32 -> float16 conversion -- runs unrecorded.
The guards' symbols stay allowed because torch::empty_like holds one inline (AutoDispatchBelowADInplaceOrView).

Expected: feasible until the guard's key set is judged when it is constructed (a positive rule: only the keys
torch's own inline code excludes, never Python/PythonTLSSnapshot). Task: tests/verifier/attacks/tasks/to_half.py.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

#define EVK_CAT(a, b) a##b
using KeyGuard = decltype(at::AutoNonVariableTypeMode::autograd_guard_);
using Keys = c10::EVK_CAT(Dispatch, KeySet);
using Key = c10::EVK_CAT(Dispatch, Key);

torch::Tensor to_half(torch::Tensor x) {
    torch::Tensor out = torch::empty(x.sizes(), x.options().dtype(torch::kHalf));
    {
        KeyGuard blind(Keys(Key::Python) | Keys(static_cast<Key>(static_cast<uint8_t>(Key::DeferredInit) + 1)));
        out.copy_(x);  // PyTorch's float -> half conversion, unseen by the recorder
    }
    return out;
}
"""

ext = load_inline(name="rt3_scoped_guard", cpp_sources=[CPP], functions=["to_half"], extra_cflags=["-O2"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.to_half(x.contiguous())
