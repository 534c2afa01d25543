"""``call_module`` nodes lowered into the IR (a mixin of :class:`~.normalise.Normaliser`): activations, Linear,
convolutions, pooling, normalisations, dropout and the losses as modules; and the conv/pool/norm helpers the
functional forms (:mod:`.calls`) share.
"""
from __future__ import annotations

from typing import Any

from torch import fx, nn

from evokernel.generators.template.front.fxops import _MODULE_UNARY, _cv, _norm_dim
from evokernel.generators.template.front.graph import Ref

UNHANDLED = object()  # a handler's answer for a module it does not lower (the next one is asked)


class ModuleOps:
    def visit_module(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """The module call lowered by the first handler that knows the module's type."""
        for handler in (self._module_elementwise, self._module_conv_pool_norm, self._module_recurrent,
                        self._module_attention, self._module_other):
            out = handler(n, mod, path)
            if out is not UNHANDLED:
                return out
        raise self.fail(n, f"module {type(mod).__name__} is not supported")

    def _module_elementwise(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """Activations, softmax/log_softmax, Linear, LayerNorm."""
        x = self.arg(n.args[0])
        for cls, fn in _MODULE_UNARY.items():
            if type(mod) is cls:
                return self.unary(fn, x, n)
        if isinstance(mod, nn.GELU):
            return self.unary("gelu_tanh" if mod.approximate == "tanh" else "gelu", x, n)
        if isinstance(mod, nn.LeakyReLU):
            return self.unary("leaky_relu", x, n, slope=float(mod.negative_slope))
        if isinstance(mod, nn.ELU):
            return self.unary("elu", x, n, alpha=float(mod.alpha))
        if isinstance(mod, nn.Softplus):
            return self.unary("softplus", x, n, beta=float(mod.beta), threshold=float(mod.threshold))
        if isinstance(mod, nn.Hardtanh):
            return self.unary("clamp", x, n, lo=float(mod.min_val), hi=float(mod.max_val))
        if isinstance(mod, nn.Softmax):
            return self.softmax(x, _norm_dim(mod.dim, self.shape(x), n, self), n)
        if isinstance(mod, nn.LogSoftmax):
            return self.softmax(x, _norm_dim(mod.dim, self.shape(x), n, self), n, log=True)
        if isinstance(mod, nn.Linear):
            w = self.param(f"{path}.weight")
            y = self.gemm(x, w, n, trans_b=True)
            if mod.bias is not None:
                y = self.binary("add", y, self.param(f"{path}.bias"), n)
            return y
        if isinstance(mod, nn.LayerNorm):
            w = self.param(f"{path}.weight") if mod.weight is not None else None
            b = self.param(f"{path}.bias") if mod.bias is not None else None
            return self.layer_norm(x, mod.normalized_shape, w, b, float(mod.eps), n)
        return UNHANDLED

    def _module_conv_pool_norm(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """Convolutions, pooling, batch/instance/group norm."""
        x = self.arg(n.args[0])
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                            nn.ConvTranspose3d)):
            if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                raise self.fail(n, "convolution with a padding mode or string padding")
            w = self.param(f"{path}.weight")
            args = [x, w] + ([self.param(f"{path}.bias")] if mod.bias is not None else [])
            transposed = isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d))
            if isinstance(mod, nn.Conv2d) and mod.groups == 1:
                return self._conv(n, args, mod.stride, mod.padding, mod.dilation)
            return self._convnd(n, args, mod.stride, mod.padding, mod.dilation, mod.groups, transposed,
                                mod.output_padding if transposed else 0)
        if isinstance(mod, (nn.MaxPool1d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool3d)):
            kind = "max" if isinstance(mod, (nn.MaxPool1d, nn.MaxPool3d)) else "avg"
            if getattr(mod, "return_indices", False):
                raise self.fail(n, "max pooling that returns indices")
            return self._poolnd(n, kind, x, mod.kernel_size, mod.stride, mod.padding, getattr(mod, "dilation", 1),
                                mod.ceil_mode, getattr(mod, "count_include_pad", True),
                                getattr(mod, "divisor_override", None))
        if isinstance(mod, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
                            nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)):
            if getattr(mod, "return_indices", False):
                raise self.fail(n, "adaptive max pooling that returns indices")
            kind = "max" if "Max" in type(mod).__name__ else "avg"
            return self._adaptive_pool(n, kind, x)
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            batch_stats = mod.training or not mod.track_running_stats
            w = self.param(f"{path}.weight") if mod.affine else None
            b = self.param(f"{path}.bias") if mod.affine else None
            rm = None if batch_stats else self.param(f"{path}.running_mean")
            rv = None if batch_stats else self.param(f"{path}.running_var")
            update = None
            if mod.training and mod.track_running_stats and mod.running_mean is not None:
                # training mode updates the running statistics in place (and counts the batch): the kernel must too
                update = ([self.param(f"{path}.running_mean"), self.param(f"{path}.running_var"),
                           self.param(f"{path}.num_batches_tracked")], mod.momentum)
            return self._batch_norm(n, x, w, b, rm, rv, float(mod.eps), update)
        if isinstance(mod, (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)):
            if mod.track_running_stats and not mod.training:
                raise self.fail(n, "instance norm with running statistics in eval mode")
            w = self.param(f"{path}.weight") if mod.affine else None
            b = self.param(f"{path}.bias") if mod.affine else None
            return self._instance_norm(n, x, w, b, float(mod.eps))
        if isinstance(mod, (nn.MaxPool2d, nn.AvgPool2d)):
            kind = "max" if isinstance(mod, nn.MaxPool2d) else "avg"
            return self._pool(n, kind, x, mod.kernel_size, mod.stride, mod.padding,
                              getattr(mod, "dilation", 1), mod.ceil_mode,
                              getattr(mod, "count_include_pad", True), getattr(mod, "divisor_override", None))
        if isinstance(mod, nn.GroupNorm):
            w = self.param(f"{path}.weight") if mod.affine else None
            b = self.param(f"{path}.bias") if mod.affine else None
            return self._group_norm(n, x, mod.num_groups, w, b, float(mod.eps))
        return UNHANDLED

    def _module_recurrent(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """nn.LSTM / nn.GRU / nn.RNN (every layer, both directions, batch_first or not, a given or zero initial
        state). The call's value is a marker ``("rnn", spec)``; indexing it (:meth:`rnn_result`) makes the ``rnn``
        node of the output asked for (``out``, ``h_n`` or ``c_n``), whose kernel reads the module's own weights."""
        if not isinstance(mod, (nn.LSTM, nn.GRU, nn.RNN)):
            return UNHANDLED
        if type(mod) not in (nn.LSTM, nn.GRU, nn.RNN):
            raise self.fail(n, f"a subclass of {type(mod).__mro__[1].__name__} (its forward may differ)")
        if isinstance(mod, nn.LSTM):
            mode = "lstm"
            if mod.proj_size:
                raise self.fail(n, "LSTM with proj_size")
        elif isinstance(mod, nn.GRU):
            mode = "gru"
        else:
            mode = "rnn_tanh" if mod.nonlinearity == "tanh" else "rnn_relu"
        if mod.dropout > 0 and mod.training and mod.num_layers > 1:
            raise self.fail(n, f"{type(mod).__name__}(dropout={mod.dropout}) in training mode draws a random mask "
                               "between layers: no deterministic kernel can match the reference")
        x = self.arg(n.args[0]) if n.args else self.arg(n.kwargs.get("input"))
        hx = self.arg(n.args[1]) if len(n.args) > 1 else self.arg(n.kwargs.get("hx"))
        if type(x) is not Ref or len(self.shape(x)) != 3:
            raise self.fail(n, "a recurrent module on an unbatched (2-D) input")
        L, D, H = int(mod.num_layers), 2 if mod.bidirectional else 1, int(mod.hidden_size)
        T, B = self.shape(x)[:2] if not mod.batch_first else self.shape(x)[1::-1]
        if self.shape(x)[2] != mod.input_size:
            raise self.fail(n, f"input features {self.shape(x)[2]} != input_size {mod.input_size}")
        state = (L * D, B, H)
        if mode == "lstm":
            if hx is None:
                h0 = c0 = None
            elif isinstance(hx, (tuple, list)) and len(hx) == 2:
                h0, c0 = hx
            else:
                raise self.fail(n, "an LSTM state that is not a (h0, c0) pair")
        else:
            h0, c0 = hx, None
        for s in (h0, c0):
            if s is not None and (type(s) is not Ref or self.shape(s) != state):
                raise self.fail(n, f"an initial state that is not a tensor of shape {state}")
        weights: list[int] = []
        for layer in range(L):
            for sfx in ("", "_reverse")[:D]:
                names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if mod.bias else [])
                weights += [self.param(f"{path}.{w}_l{layer}{sfx}") for w in names]
        spec = {"mode": mode, "x": x, "h0": h0, "c0": c0, "weights": weights, "layers": L, "dirs": D, "hidden": H,
                "T": int(T), "B": int(B), "I": int(mod.input_size), "batch_first": bool(mod.batch_first),
                "bias": bool(mod.bias), "origin": n.name, "made": {}}
        return ("rnn", spec)

    def rnn_result(self, n: fx.Node, base: tuple, idx: Any) -> Any:
        """``lstm(...)[i]``, ``gru(...)[i]`` and ``lstm(...)[1][j]``: the ``rnn`` node of that output (one per output
        kind and module call; an output nobody reads is dropped by the planner)."""
        tag, spec = base
        idx = _cv(idx)
        if not isinstance(idx, int) or idx not in (0, 1):
            raise self.fail(n, f"index {idx!r} of a recurrent module's result")
        if tag == "rnn" and idx == 1 and spec["mode"] == "lstm":
            return ("rnn_state", spec)
        kind = "out" if tag == "rnn" and idx == 0 else ("c_n" if tag == "rnn_state" and idx == 1 else "h_n")
        if kind in spec["made"]:
            return spec["made"][kind]
        L, D, H, T, B = (spec[k] for k in ("layers", "dirs", "hidden", "T", "B"))
        shape = ((B, T, D * H) if spec["batch_first"] else (T, B, D * H)) if kind == "out" else (L * D, B, H)
        args = [spec["x"]] + [s for s in (spec["h0"], spec["c0"]) if s is not None] + spec["weights"]
        attrs = {k: spec[k] for k in ("mode", "layers", "dirs", "hidden", "T", "B", "I", "batch_first", "bias")}
        attrs.update(kind=kind, has_h0=spec["h0"] is not None, has_c0=spec["c0"] is not None)
        nid = self.g.add("rnn", args, attrs, shape, origin=spec["origin"])
        spec["made"][kind] = nid
        return nid

    # -------------------------------------------------------------------------------- attention modules
    def _module_attention(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """nn.MultiheadAttention (its value is a marker ``("attn", out)``: ``[0]`` is the output, the averaged
        weights are not computed), nn.TransformerEncoderLayer and nn.TransformerEncoder, decomposed into the ops
        the planner has: gemms, softmax, layer norm, elementwise, and copies for the heads' permutations. Masks,
        dropout in training mode and other activations than ReLU/GELU are refused."""
        if isinstance(mod, nn.MultiheadAttention):
            if len(n.args) < 3 or any(n.kwargs.get(k) is not None for k in ("key_padding_mask", "attn_mask")) \
                    or n.kwargs.get("is_causal"):
                raise self.fail(n, "multi-head attention with a mask, or without query, key and value given")
            q, k, v = (self.arg(a) for a in n.args[:3])
            return ("attn", self._mha(n, mod, path, q, k, v))
        if isinstance(mod, nn.TransformerEncoderLayer):
            self._no_extra_args(n)
            return self._encoder_layer(n, mod, path, self.arg(n.args[0]))
        if isinstance(mod, nn.TransformerEncoder):
            self._no_extra_args(n)
            x = self.arg(n.args[0])
            for i, layer in enumerate(mod.layers):
                x = self._encoder_layer(n, layer, f"{path}.layers.{i}", x)
            if mod.norm is not None:
                x = self._norm_module(n, mod.norm, f"{path}.norm", x)
            return x
        return UNHANDLED

    def _no_extra_args(self, n: fx.Node) -> None:
        if len(n.args) > 1 or any(v is not None and v is not False for v in n.kwargs.values()):
            raise self.fail(n, "a transformer encoder with a mask or other arguments")

    def _linear_at(self, n: fx.Node, x: Any, w: Any, b: Any) -> Any:
        y = self.gemm(x, w, n, trans_b=True)
        return self.binary("add", y, b, n) if b is not None else y

    def _norm_module(self, n: fx.Node, norm: nn.Module, path: str, x: Any) -> Any:
        if not isinstance(norm, nn.LayerNorm):
            raise self.fail(n, f"a transformer norm of type {type(norm).__name__}")
        w = self.param(f"{path}.weight") if norm.weight is not None else None
        b = self.param(f"{path}.bias") if norm.bias is not None else None
        return self.layer_norm(x, norm.normalized_shape, w, b, float(norm.eps), n)

    def _rows(self, n: fx.Node, t: Any, start: int, count: int) -> Any:
        """Rows ``start:start+count`` of a parameter (a third of ``in_proj_weight``), copied contiguous."""
        shp = self.shape(t)
        inner = 1
        for s_ in shp[1:]:
            inner *= s_
        pst = [inner] + [1 if i == len(shp) - 1 else 0 for i in range(1, len(shp))]
        if len(shp) > 2:
            raise self.fail(n, "an attention projection of more than 2 dims")
        return self.g.add("slice_copy", [t], {"base": start * inner, "pst": pst[:len(shp)]},
                          (count,) + tuple(shp[1:]), origin=n.name)

    def _mha(self, n: fx.Node, mod: nn.MultiheadAttention, path: str, q: Any, k: Any, v: Any) -> Any:
        if mod.training and mod.dropout > 0:
            raise self.fail(n, f"MultiheadAttention(dropout={mod.dropout}) in training mode draws a random mask")
        if not mod._qkv_same_embed_dim or mod.bias_k is not None or mod.add_zero_attn:
            raise self.fail(n, "multi-head attention with separate key/value sizes, bias_k/bias_v or add_zero_attn")
        if any(type(t) is not Ref or len(self.shape(t)) != 3 for t in (q, k, v)):
            raise self.fail(n, "multi-head attention on other than batched 3-D tensors")
        E, H = int(mod.embed_dim), int(mod.num_heads)
        d = E // H
        w_in = self.param(f"{path}.in_proj_weight")
        b_in = self.param(f"{path}.in_proj_bias") if mod.in_proj_bias is not None else None
        heads = []
        for i, t in enumerate((q, k, v)):
            p = self._linear_at(n, t, self._rows(n, w_in, i * E, E),
                                self._rows(n, b_in, i * E, E) if b_in is not None else None)
            a_, b_ = self.shape(p)[:2]  # (B, S) batch first, else (S, B)
            r = self.g.add("reshape", [p], {}, (a_, b_, H, d), origin=n.name)
            perm = [0, 2, 1, 3] if mod.batch_first else [1, 2, 0, 3]  # (B, H, S, d)
            bsz, seq = (a_, b_) if mod.batch_first else (b_, a_)
            heads.append(self.g.add("permute_copy", [r], {"perm": perm}, (bsz, H, seq, d), origin=n.name))
        qh, kh, vh = heads
        scores = self.binary("mul", self.gemm(qh, kh, n, trans_b=True), self.c(1.0 / d ** 0.5), n)
        o = self.gemm(self.softmax(scores, 3, n), vh, n)  # (B, H, Sq, d)
        bsz, _, sq, _ = self.shape(o)
        if mod.batch_first:
            o = self.g.add("permute_copy", [o], {"perm": [0, 2, 1, 3]}, (bsz, sq, H, d), origin=n.name)
            o = self.g.add("reshape", [o], {}, (bsz, sq, E), origin=n.name)
        else:
            o = self.g.add("permute_copy", [o], {"perm": [2, 0, 1, 3]}, (sq, bsz, H, d), origin=n.name)
            o = self.g.add("reshape", [o], {}, (sq, bsz, E), origin=n.name)
        b_out = self.param(f"{path}.out_proj.bias") if mod.out_proj.bias is not None else None
        return self._linear_at(n, o, self.param(f"{path}.out_proj.weight"), b_out)

    def _encoder_layer(self, n: fx.Node, mod: nn.Module, path: str, x: Any) -> Any:
        if not isinstance(mod, nn.TransformerEncoderLayer) or type(mod) is not nn.TransformerEncoderLayer:
            raise self.fail(n, f"an encoder layer of type {type(mod).__name__} (its forward may differ)")
        if mod.training and any(d.p > 0 for d in (mod.dropout, mod.dropout1, mod.dropout2)):
            raise self.fail(n, "TransformerEncoderLayer with dropout in training mode draws random masks")
        act = mod.activation
        if act is nn.functional.relu or isinstance(act, nn.ReLU):
            fn = "relu"
        elif act is nn.functional.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
            fn = "gelu"
        else:
            raise self.fail(n, f"encoder layer activation {act!r}")

        def attn(t: Any) -> Any:
            return self._mha(n, mod.self_attn, f"{path}.self_attn", t, t, t)

        def ff(t: Any) -> Any:
            b1 = self.param(f"{path}.linear1.bias") if mod.linear1.bias is not None else None
            b2 = self.param(f"{path}.linear2.bias") if mod.linear2.bias is not None else None
            h = self.unary(fn, self._linear_at(n, t, self.param(f"{path}.linear1.weight"), b1), n)
            return self._linear_at(n, h, self.param(f"{path}.linear2.weight"), b2)

        norm1 = lambda t: self._norm_module(n, mod.norm1, f"{path}.norm1", t)
        norm2 = lambda t: self._norm_module(n, mod.norm2, f"{path}.norm2", t)
        if mod.norm_first:
            x = self.binary("add", x, attn(norm1(x)), n)
            return self.binary("add", x, ff(norm2(x)), n)
        x = norm1(self.binary("add", x, attn(x), n))
        return norm2(self.binary("add", x, ff(x), n))

    def _module_other(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
        """Triplet margin loss, dropout, identity, flatten."""
        x = self.arg(n.args[0])
        if isinstance(mod, nn.TripletMarginLoss):
            if mod.p != 2 or mod.swap:
                raise self.fail(n, "triplet margin loss with p != 2 or swap")
            a_, p_, n_ = (self.arg(v) for v in n.args[:3])

            def dist(u: Any, v: Any) -> Any:  # pairwise_distance: ||u - v + eps||_2 over the last dim
                diff = self.binary("add", self.binary("sub", u, v, n), self.c(mod.eps), n)
                return self.unary("sqrt", self.reduce("sum", self.unary("square", diff, n), -1, True, n), n)

            loss = self.unary("relu", self.binary("add", self.binary("sub", dist(a_, p_), dist(a_, n_), n),
                                                  self.c(mod.margin), n), n)
            if mod.reduction == "none":
                return self.g.add("reshape", [loss], {}, tuple(self.values[n.name].shape), origin=n.name)
            return self.reduce("mean" if mod.reduction == "mean" else "sum", loss, None, False, n)
        if isinstance(mod, nn.Dropout) and mod.training and mod.p > 0:
            raise self.fail(n, f"Dropout(p={mod.p}) in training mode draws a random mask on every call: no "
                               "deterministic kernel can match the reference")
        if isinstance(mod, (nn.Identity, nn.Dropout)):
            return x
        if isinstance(mod, nn.Flatten):
            return self.g.add("reshape", [x], {}, tuple(self.values[n.name].shape), origin=n.name)
        return UNHANDLED

    def _conv(self, n: fx.Node, args: list[int], stride: Any, padding: Any, dilation: Any) -> int:
        pair = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (int(v), int(v))
        shape = tuple(self.values[n.name].shape)
        if len(shape) != 4:
            raise self.fail(n, "conv2d on a non-4-D input")
        return self.g.add("conv2d", args, {"stride": pair(stride), "padding": pair(padding),
                                           "dilation": pair(dilation), "bias": len(args) == 3}, shape, origin=n.name)

    def _convnd(self, n: fx.Node, args: list[int], stride: Any, padding: Any, dilation: Any, groups: int,
                transposed: bool, output_padding: Any) -> int:
        """Any 1-, 2- or 3-D convolution, grouped or depthwise, direct or transposed (``convnd``); the
        kernel treats it as 3-D with leading unit dims."""
        shape = tuple(self.values[n.name].shape)
        nd = len(shape) - 2
        if nd not in (1, 2, 3) or len(self.shape(args[0])) != nd + 2:
            raise self.fail(n, f"a convolution on a {len(self.shape(args[0]))}-D input (batched 1/2/3-D only)")
        if isinstance(padding, str):
            raise self.fail(n, "string padding")
        tup = lambda v: tuple(int(_cv(e)) for e in v) if isinstance(v, (tuple, list)) else (int(_cv(v)),) * nd
        pad3 = lambda t, fill: (fill,) * (3 - nd) + t
        return self.g.add("convnd", args, {
            "nd": nd, "stride": pad3(tup(stride), 1), "padding": pad3(tup(padding), 0),
            "dilation": pad3(tup(dilation), 1), "groups": int(_cv(groups)), "transposed": bool(transposed),
            "output_padding": pad3(tup(output_padding), 0), "bias": len(args) == 3}, shape, origin=n.name)

    def _poolnd(self, n: fx.Node, kind: str, x: int, k: Any, s: Any, p: Any, d: Any, ceil: bool,
                include_pad: bool, divisor: Any) -> int:
        """Max or average pooling in 1, 2 or 3 dims (``poolnd``), as 3-D with leading unit dims."""
        if divisor is not None:
            raise self.fail(n, "average pooling with divisor_override")
        shape = tuple(self.values[n.name].shape)
        nd = len(shape) - 2
        if nd not in (1, 2, 3) or len(self.shape(x)) != nd + 2:
            raise self.fail(n, "pooling on an unbatched input")
        tup = lambda v: tuple(int(_cv(e)) for e in v) if isinstance(v, (tuple, list)) else (int(_cv(v)),) * nd
        s = k if s is None or (isinstance(s, (list, tuple)) and len(s) == 0) else s
        pad3 = lambda t, fill: (fill,) * (3 - nd) + t
        return self.g.add("poolnd", [x], {"kind": kind, "adaptive": False, "k": pad3(tup(k), 1), "s": pad3(tup(s), 1),
                                          "p": pad3(tup(p), 0), "d": pad3(tup(d), 1), "ceil": bool(ceil),
                                          "include_pad": bool(include_pad)}, shape, origin=n.name)

    def _adaptive_pool(self, n: fx.Node, kind: str, x: int) -> int:
        shape = tuple(self.values[n.name].shape)
        nd = len(shape) - 2
        if nd not in (1, 2, 3) or len(self.shape(x)) != nd + 2:
            raise self.fail(n, "adaptive pooling on an unbatched input")
        one = (1, 1, 1)
        return self.g.add("poolnd", [x], {"kind": kind, "adaptive": True, "k": one, "s": one, "p": (0, 0, 0),
                                          "d": one, "ceil": False, "include_pad": True}, shape, origin=n.name)

    def _batch_norm(self, n: fx.Node, x: int, w: Any, b: Any, rm: Any, rv: Any, eps: float,
                    update: tuple[list[Any], float | None] | None = None) -> int:
        """Batch norm over dim 1 (``batch_norm``): statistics of the batch (training mode, or no running
        statistics) or the running ones (eval mode). ``update``: ([running_mean, running_var, num_batches_tracked
        or None], momentum or None) of a training-mode norm that tracks running statistics: the kernel updates
        them as PyTorch does (the verifier compares the model's buffers after each call)."""
        shp = self.shape(x)
        if len(shp) < 2:
            raise self.fail(n, "batch norm on a 1-D input")
        if (rm is None) != (rv is None):
            raise self.fail(n, "batch norm with only one running statistic")
        args = [x] + ([w, b] if w is not None else []) + ([rm, rv] if rm is not None else [])
        attrs: dict[str, Any] = {"eps": eps, "affine": w is not None, "batch_stats": rm is None}
        if update is not None:
            (urm, urv, nbt), momentum = update
            args += [urm, urv] + ([nbt] if nbt is not None else [])
            attrs.update(update=True, momentum=-1.0 if momentum is None else float(momentum), counted=nbt is not None)
        for a in args[1:len(args) - (1 if update is not None and update[0][2] is not None else 0)]:
            if self.shape(a) != (shp[1],):
                raise self.fail(n, "batch norm parameters that are not per channel")
        return self.g.add("batch_norm", args, attrs, shp, origin=n.name)

    def _instance_norm(self, n: fx.Node, x: int, w: Any, b: Any, eps: float) -> int:
        """Instance norm is group norm with one channel per group."""
        shp = self.shape(x)
        if len(shp) < 3:
            raise self.fail(n, "instance norm on an unbatched input")
        return self._group_norm(n, x, shp[1], w, b, eps)

    def _einsum(self, n: fx.Node, args: list[Any], val: Any) -> int:
        """einsum of two operands that is a matmul: ``...l,lk->...k`` (also with batch dims shared by both
        operands, ``bij,bjk->bik``); anything else is refused."""
        eq = args[0] if isinstance(args[0], str) else None
        ops = list(args[1:]) if eq is not None else []
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
        if eq is None or len(ops) != 2 or "->" not in eq or "." in eq:
            raise self.fail(n, "einsum other than two operands with an explicit output")
        lhs, out = eq.replace(" ", "").split("->")
        sa, sb = lhs.split(",")
        if len(sb) < 2 or len(sa) < 2:
            raise self.fail(n, f"einsum {eq!r} is not a matmul")
        contracted = set(sa) & set(sb) - set(out)
        if len(contracted) != 1 or sa[-1] not in contracted:
            raise self.fail(n, f"einsum {eq!r}: only a contraction over the last dim of the first operand is supported")
        l = sa[-1]
        if sb[-2:] == l + sb[-1] and out == sa[:-1] + sb[-1] and sb[:-2] in ("", sa[:len(sb) - 2]):
            return self.gemm(ops[0], ops[1], n)
        if sb[-2:] == sb[-2] + l and out == sa[:-1] + sb[-2] and sb[:-2] in ("", sa[:len(sb) - 2]):
            return self.gemm(ops[0], ops[1], n, trans_b=True)
        raise self.fail(n, f"einsum {eq!r} is not a matmul this generator can lower")

    def _pool(self, n: fx.Node, kind: str, x: int, k: Any, s: Any, p: Any, d: Any, ceil: bool,
              include_pad: bool, divisor: Any) -> int:
        pair = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (int(v), int(v))
        if divisor is not None:
            raise self.fail(n, "avg_pool2d with divisor_override")
        shape = tuple(self.values[n.name].shape)
        if len(shape) != 4:
            raise self.fail(n, "pool2d on a non-4-D input")
        s = k if s is None or (isinstance(s, (list, tuple)) and len(s) == 0) else s
        return self.g.add("pool2d", [x], {"kind": kind, "k": pair(k), "s": pair(s), "p": pair(p), "d": pair(d),
                                          "ceil": bool(ceil), "include_pad": bool(include_pad)}, shape, origin=n.name)

    def _group_norm(self, n: fx.Node, x: int, groups: int, w: Any, b: Any, eps: float) -> int:
        args = [x] + ([w, b] if w is not None else [])
        return self.g.add("group_norm", args, {"groups": int(groups), "eps": eps, "affine": w is not None},
                          self.shape(x), origin=n.name)
