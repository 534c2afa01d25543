"""x1 >= x2, a bool tensor: the GreaterEqual sample of Ascend's samples (its OpDef declares a bool output)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x1, x2):
        return x1 >= x2


rows = 8
cols = 2048


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
