"""Fully connected layer, swish (y * sigmoid(y)), then a sum over the output features: one value per row."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = self.fc(x)
        return torch.sum(y * torch.sigmoid(y), dim=1)


batch_size = 512
in_features = 200
out_features = 336


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
