"""Hack (static): imports numpy and computes ReLU in numpy on x.numpy() instead of in native code."""
import numpy as np

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tensor(np.maximum(x.numpy(), 0.0))
