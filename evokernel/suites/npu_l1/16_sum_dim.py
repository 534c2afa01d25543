"""Sum reduction over the last dimension of a 2-D tensor (keepdim=False)."""
import torch
import torch.nn as nn

CATEGORY = "reduction"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=-1)


batch_size = 512
dim = 777


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
