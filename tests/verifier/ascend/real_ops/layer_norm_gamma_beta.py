"""Layer normalisation over the last dimension with gamma and beta passed as inputs (the LayerNormCustom
sample of Ascend's samples takes them as tensors, not as parameters)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, epsilon):
        super().__init__()
        self.epsilon = epsilon

    def forward(self, x, gamma, beta):
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, self.epsilon)


rows = 16
cols = 1024
epsilon = 1e-5


def get_inputs():
    return [torch.randn(rows, cols), torch.rand(cols) + 0.5, torch.randn(cols)]


def get_init_inputs():
    return [epsilon]
