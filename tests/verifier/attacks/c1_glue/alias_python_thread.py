"""Class 1 - glue reaches the harness: `threading` cannot be imported, but `T.sys.modules` hands it
out; the operator recorder is a thread-local dispatch mode, so `torch.clamp(min=0)` run on a Python
thread started from forward is invisible to it (a one-line native call keeps the "a native kernel
ran" check happy). Defence: the positive AST allow-list."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
extern "C" int touch(int v) { return v + 1; }
""")

T = torch
threading = T.sys.modules["threading"]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        t = threading.Thread(target=T.clamp, args=(x,), kwargs={"min": 0.0, "out": out})
        t.start()
        t.join()
        lib.touch(1)
        return out
