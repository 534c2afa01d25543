"""Row-wise L2 normalization: x / ||x||_2 computed over the last dimension."""
import torch
import torch.nn as nn

CATEGORY = "normalization"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.norm(x, p=2, dim=-1, keepdim=True)


batch_size = 2048
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
