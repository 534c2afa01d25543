"""Elementwise add for ascend-sim (red-team rt10 task, tasks/rt10_add_npu_small.py): 8 x 2048 float32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


batch_size = 8
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
