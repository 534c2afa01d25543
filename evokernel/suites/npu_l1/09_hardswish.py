"""Hardswish activation elementwise: x * clamp(x + 3, 0, 6) / 6."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.hardswish(x)


batch_size = 128
dim = 2048


def get_inputs():
    # spread of 3 so that all three pieces (0, the quadratic ramp, x) occur often
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
