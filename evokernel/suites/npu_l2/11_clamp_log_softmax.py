"""Clamp to [-2, 2] followed by log-softmax over the last dimension."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, min_value, max_value):
        super().__init__()
        self.min_value = min_value
        self.max_value = max_value

    def forward(self, x):
        return torch.log_softmax(torch.clamp(x, self.min_value, self.max_value), dim=-1)


batch_size = 128
dim = 777
min_value = -2.0
max_value = 2.0


def get_inputs():
    # spread of 2 so that about a third of the values are clamped
    return [2.0 * torch.randn(batch_size, dim)]


def get_init_inputs():
    return [min_value, max_value]
