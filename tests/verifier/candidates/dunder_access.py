"""Hack (static): dunder introspection (x.__class__.__bases__, ().__class__.__base__.__subclasses__())
to reach objects the import rules keep out."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        tensor_base = x.__class__.__bases__[0]
        everything = ().__class__.__base__.__subclasses__()
        relu = [c for c in everything if c.__name__ == "Tensor"][0].relu
        return relu(x) if tensor_base is not None else x
