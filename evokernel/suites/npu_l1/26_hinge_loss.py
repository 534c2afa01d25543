"""Hinge loss mean(clamp(1 - predictions * targets, min=0)) with targets in {-1, +1}."""
import torch
import torch.nn as nn

CATEGORY = "loss"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1.0 - predictions * targets, min=0.0))


batch_size = 256
dim = 1024


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randint(0, 2, (batch_size, dim)).float() * 2.0 - 1.0
    return [predictions, targets]


def get_init_inputs():
    return []
