"""Elementwise addition of two same-shaped tensors: a + b."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


batch_size = 128
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
