"""Scaled addition (axpy): alpha * x + y with a constant alpha."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        return self.alpha * x + y


batch_size = 512
dim = 512
alpha = 0.75


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
