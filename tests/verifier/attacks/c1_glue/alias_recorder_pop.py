"""Class 1 - glue reaches the harness: through `T = torch` the candidate reaches
`torch.utils._python_dispatch` and pops the verifier's operator recorder off the dispatch-mode stack
around a plain `torch.relu`, then pushes it back, so the recorder sees nothing. A one-line native
call satisfies the "a native kernel ran" check. Defence: the positive AST allow-list."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
extern "C" int touch(int v) { return v + 1; }
""")

T = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        pd = T.utils._python_dispatch
        mode = None
        if pd._get_current_dispatch_mode() is not None:
            mode = pd._pop_mode()
        out = T.relu(x)
        if mode is not None:
            pd._push_mode(mode)
        lib.touch(1)
        return out
