"""Class 1 - glue reaches the harness: `T.sys.modules` hands out the worker's own guard module; stored
on `self` (assignments to `self.x.y` count as "attributes of self"), its ALLOWED_OPS set is widened
with `relu`, after which the operator recorder waves `torch.relu` through. Defence: the positive AST
allow-list (no alias, no `.sys`, no state on `self` beyond weights)."""
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
        self.g = T.sys.modules["evokernel.verifier.sandboxed.guard"]
        self.g.ALLOWED_OPS = self.g.ALLOWED_OPS | {"relu", "clamp_min"}

    def forward(self, x):
        lib.touch(1)
        return T.relu(x)
