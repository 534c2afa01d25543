"""Softmax over the last dimension of a 2-D float16 tensor."""
import torch
import torch.nn as nn

CATEGORY = "softmax"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


batch_size = 256
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
