"""Smooth L1 (Huber, beta 1) loss between predictions and targets, mean-reduced to a scalar."""
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"


class Model(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets, beta=self.beta)


batch_size = 127
dim = 1501
beta = 1.0


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
