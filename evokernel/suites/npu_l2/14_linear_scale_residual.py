"""Fully connected layer, scaled, plus itself as a residual: y * scale + y with y = x @ W.T + b (y read twice)."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = self.fc(x)
        return y * self.scaling_factor + y


batch_size = 256
in_features = 520
out_features = 272
scaling_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
