"""Elementwise addition of two same-shaped float16 tensors: a + b."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


batch_size = 125
dim = 2003


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16), torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
