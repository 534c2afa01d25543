"""BatchNorm1d in training mode (red-team rt10 task): 256 x 64 float32. Each forward normalises with the batch's
statistics and updates the running mean and variance (the state a later eval() uses)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x):
        return self.bn(x)


batch_size = 256
num_features = 64


def get_inputs():
    return [torch.randn(batch_size, num_features)]


def get_init_inputs():
    return [num_features]
