"""Compile: the candidate is not valid Python (missing colon and unbalanced parenthesis)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module)
    def __init__(self):
        super().__init__(

    def forward(self, x):
        return torch.empty_like(x)
