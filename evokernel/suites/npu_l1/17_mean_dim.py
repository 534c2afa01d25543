"""Mean reduction over dim=1 (the middle dimension) of a 3-D tensor (keepdim=False)."""
import torch
import torch.nn as nn

CATEGORY = "reduction"


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


batch_size = 32
dim1 = 48
dim2 = 256
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
