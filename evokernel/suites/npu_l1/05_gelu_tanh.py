"""GELU with the tanh approximation: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


batch_size = 96
dim = 3072


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
