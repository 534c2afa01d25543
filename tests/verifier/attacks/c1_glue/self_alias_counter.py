"""Class 1 - glue reaches the harness, with no native code at all: `self.T = torch` (an attribute
alias) reaches the active operator recorder and clears its findings after a plain `torch.relu`, and
bumps `evokernel.cpu`'s native-call counter so "a native kernel ran" holds. Defence: the positive
AST allow-list (and a verdict that does not rest on in-process counters)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.T = torch
        self.cpu = self.T.sys.modules["evokernel.cpu"]

    def forward(self, x):
        out = self.T.relu(x)
        mode = self.T.utils._python_dispatch._get_current_dispatch_mode()
        if mode is not None:
            mode.violations.clear()
        self.cpu._native_calls += 1
        return out
