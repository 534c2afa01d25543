"""Masked mean over a sequence: the mean of the kept positions of each row, 0 for a row with none kept."""
import torch
import torch.nn as nn

CATEGORY = "reduction"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        m = mask.to(x.dtype)
        return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


batch_size = 128
seq_len = 256


def get_inputs():
    return [torch.randn(batch_size, seq_len), torch.rand(batch_size, seq_len) > 0.5]


def get_init_inputs():
    return []
