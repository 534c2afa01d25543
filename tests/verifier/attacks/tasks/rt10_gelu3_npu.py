"""GELU (tanh form) applied three times (red-team rt10 task, ascend-sim): 1024 x 3072 float32. Enough vector work
per byte that an honest fused kernel is bound by the vector unit, not by HBM."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(F.gelu(F.gelu(x, approximate="tanh"), approximate="tanh"), approximate="tanh")


batch_size = 1024
dim = 3072


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
