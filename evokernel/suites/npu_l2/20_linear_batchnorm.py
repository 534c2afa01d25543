"""Fully connected layer, scaled per feature, then BatchNorm1d with batch statistics (training mode, random affine) and GELU."""
import torch
import torch.nn as nn

CATEGORY = "fusion"


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(out_features))
        self.bn = nn.BatchNorm1d(out_features)
        with torch.no_grad():
            self.bn.weight.copy_(torch.rand(out_features) + 0.5)
            self.bn.bias.copy_(torch.randn(out_features) * 0.5)

    def forward(self, x):
        return nn.functional.gelu(self.bn(self.fc(x) * self.scale))


batch_size = 400
in_features = 200
out_features = 272


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
