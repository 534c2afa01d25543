"""Class 1 - glue reaches the harness: `T = torch` is a plain assignment the static rules do not track,
so `T.sys.modules` hands out any module the worker has imported; here numpy does the ReLU
(`np.asarray` shares the tensors' memory) while a one-line native call keeps the "a native kernel
ran" check happy. Defence: the positive AST allow-list refuses the alias (and `.sys`)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
extern "C" int touch(int v) { return v + 1; }
""")

T = torch
np = T.sys.modules["numpy"]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        np.maximum(np.asarray(x), 0.0, out=np.asarray(out))
        lib.touch(1)
        return out
