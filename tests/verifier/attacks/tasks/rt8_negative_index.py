"""Column gather with Python-style indices: y = x[:, idx] (negative indices count from the end)."""
import torch
import torch.nn as nn

CATEGORY = "indexing"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, idx):
        return x[:, idx]


batch_size = 64
cols = 64
picks = 256


def get_inputs():
    return [torch.randn(batch_size, cols), torch.randint(0, cols, (picks,))]


def get_init_inputs():
    return []
