"""What torch.nn offers a candidate's glue, derived from torch.nn itself rather than a hand list.

* layer classes: the public nn.Module subclasses of torch.nn (Linear, Conv2d, LayerNorm, ...), which a
  candidate instantiates in ``__init__`` exactly as the reference's Model does, so that the seeded
  weights come out the same; calling one is PyTorch compute and is refused;
* a layer's **tensor attributes**: its parameters and buffers, recognised by the names torch gives them
  (``weight``, ``bias``, ``running_mean``, ``weight_ih_l0``, ``in_proj_bias``, ...);
* a layer's **configuration attributes** (read as plain values in forward): its constructor's
  parameter names and ``__constants__``;
* a layer's **sub-layers**: the children torch.nn's composite layers register (``self_attn``, ``out_proj``,
  ``linear1``, ``layers``, ...), read to reach their parameters and configuration, as the layer's own;
* ``nn.init`` functions (parameter initialisation in ``__init__``).
"""
from __future__ import annotations

import functools
import inspect
import re

_TENSOR_NAME = re.compile(r"^(weight|bias)(_\w+)?$|^\w*_(weight|bias)(_\w+)?$|^running_(mean|var)$|"
                          r"^num_batches_tracked$|^in_proj_(weight|bias)$|^[qkv]_proj_weight$|^bias_[kv]$")


@functools.lru_cache(maxsize=None)
def layers() -> frozenset[str]:
    import torch.nn as nn

    out = set()
    for name in dir(nn):
        obj = getattr(nn, name, None)
        if (not name.startswith("_") and inspect.isclass(obj) and issubclass(obj, nn.Module)
                and obj is not nn.Module):
            out.add(name)
    return frozenset(out)


def is_layer(name: str) -> bool:
    return name in layers()


@functools.lru_cache(maxsize=None)
def config_attributes() -> frozenset[str]:
    """Constructor parameter names and __constants__ of every layer class (plain values)."""
    import torch.nn as nn

    names: set[str] = {"training", "in_features", "out_features", "in_channels", "out_channels"}
    for layer in layers():
        cls = getattr(nn, layer)
        try:
            names |= {p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "args", "kwargs")}
        except (TypeError, ValueError):
            pass
        names |= set(getattr(cls, "__constants__", ()) or ())
    # constructor arguments that are modules or callables, not plain configuration
    names -= {"device", "dtype", "module", "modules", "init", "activation", "encoder_layer", "decoder_layer",
              "custom_encoder", "custom_decoder", "distance_function", "norm", "device_ids", "name", "output_device"}
    return frozenset(n for n in names if not n.startswith("_") and not _TENSOR_NAME.match(n))


def is_tensor_attribute(name: str) -> bool:
    return bool(_TENSOR_NAME.match(name))


@functools.lru_cache(maxsize=None)
def init_functions() -> frozenset[str]:
    import torch.nn.init as init

    return frozenset(n for n in dir(init) if n[:1].islower() and inspect.isfunction(getattr(init, n)))


@functools.lru_cache(maxsize=None)
def sublayer_attributes() -> frozenset[str]:
    """The attribute names under which torch.nn's own composite layers hold their children (a Transformer's
    encoder and decoder, their ``layers``, a layer's ``self_attn``/``multihead_attn``, ``linear1``, ``norm1``,
    ``dropout1``, a MultiheadAttention's ``out_proj``; AdaptiveLogSoftmaxWithLoss's ``head``/``tail``): found by
    building those layers small on the meta device and listing their children, so the names follow the installed
    torch. A candidate reads them to reach a child's parameters (``self.attn.out_proj.weight``); the child is a
    layer like any other, read for parameters and configuration only, never called."""
    import warnings

    import torch.nn as nn

    composites = (
        lambda: nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8,
                               device="meta"),
        lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5], device="meta"),
    )
    names: set[str] = set()
    for build in composites:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the nested-tensor advice of a small Transformer
                root = build()
        except (TypeError, ValueError, RuntimeError):  # a torch whose signature differs: fewer names, no error
            continue
        for module in root.modules():
            names |= {n for n, _ in module.named_children() if not n.startswith("_") and not n.isdigit()}
    return frozenset(n for n in names if not _TENSOR_NAME.match(n))


def is_sublayer_attribute(name: str) -> bool:
    return name in sublayer_attributes()
