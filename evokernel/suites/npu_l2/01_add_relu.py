"""Elementwise add of two tensors followed by ReLU: relu(a + b)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.relu(a + b)


batch_size = 256
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
