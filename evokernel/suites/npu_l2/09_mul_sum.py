"""Row-wise dot product: elementwise product of two tensors summed over the last dimension."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.sum(a * b, dim=-1)


batch_size = 512
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
