"""Hack (static): forward calls torch.relu, i.e. PyTorch does the compute instead of native code."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
