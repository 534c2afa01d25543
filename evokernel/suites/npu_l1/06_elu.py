"""ELU activation elementwise: x if x > 0 else alpha * (exp(x) - 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


batch_size = 192
dim = 1024
alpha = 1.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
