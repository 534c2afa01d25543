"""A tanh response in small physical units: y = 1e-24 * tanh(x) (rt3 red-team task; every output below 1e-23)."""
import torch
import torch.nn as nn

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unit = 1e-24

    def forward(self, x):
        return torch.tanh(x) * self.unit


batch_size = 64
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
