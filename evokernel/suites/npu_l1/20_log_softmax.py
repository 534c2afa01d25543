"""Log-softmax over the last dimension of a 2-D tensor."""
import torch
import torch.nn as nn

CATEGORY = "softmax"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


batch_size = 96
dim = 2003


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
