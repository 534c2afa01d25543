"""A task in NPUKernelBench's format (written for EvoKernel's tests): layer norm over the cases of
01_layer_norm.json, with the normalised shape as a forward argument that is not a tensor."""
import json
import os

import torch
import torch.nn as nn

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, normalized_shape, weight=None, bias=None):
        return torch.nn.functional.layer_norm(x, normalized_shape, weight=weight, bias=bias)


def get_input_groups():
    path = os.path.join(os.path.dirname(__file__), os.path.splitext(os.path.basename(__file__))[0] + ".json")
    groups = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            case = json.loads(line)
            x_info, shape_info, w_info, b_info = case["inputs"]
            dtype = DTYPES[x_info["dtype"]]
            groups.append([torch.randn(x_info["shape"], dtype=dtype), shape_info["value"],
                           torch.randn(w_info["shape"], dtype=dtype), torch.randn(b_info["shape"], dtype=dtype)])
    return groups


def get_init_inputs():
    return []
