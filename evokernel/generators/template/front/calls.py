"""Function and method calls lowered into the IR (a mixin of :class:`~.normalise.Normaliser`): torch functions,
``torch.nn.functional``, operators and tensor methods -- elementwise, reductions, matmuls, views, scans, losses.
"""
from __future__ import annotations

import math
from typing import Any

from torch import fx

from evokernel.generators.template.front.fxops import _BINARY, _UNARY_FUNCS, _VIEW_METHODS, _cv, _norm_dim, _wrap
from evokernel.generators.template.front.graph import Const, Ref, broadcast_shape

UNHANDLED = object()  # a handler's answer for a name it does not lower (the next one is asked)
# random draws in forward (torch functions and in-place tensor methods)
_RANDOM = {"randn", "rand", "randint", "randn_like", "rand_like", "randint_like", "randperm", "normal", "bernoulli",
           "multinomial", "poisson", "normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_",
           "cauchy_", "log_normal_"}


class CallOps:
    def visit_call(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """The call lowered by the first handler that knows its name."""
        if name in _RANDOM:
            raise self.fail(n, f"{name} in forward draws from the global generator, which the verifier does not seed "
                               "alike for the reference and the candidate (their draws differ: the task cannot be "
                               "judged); pass the tensor as an input instead")
        for handler in (self._call_elementwise, self._call_reduction, self._call_loss, self._call_matmul,
                        self._call_conv_pool_norm, self._call_scan_view):
            out = handler(n, name, args, kw, val)
            if out is not UNHANDLED:
                return out
        raise self.fail(n, "no lowering for this operator")

    def _call_elementwise(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Indexing a min/max result, .T, elementwise functions and binary operators."""
        g = self.g
        x = args[0] if args else kw.get("input")
        if name in ("getitem",):
            base, idx = args
            if isinstance(base, tuple) and base and base[0] == "minmax":
                if idx == 0:
                    return base[1]
                raise self.fail(n, "argmax/argmin indices are not supported")
            if isinstance(base, tuple) and base and base[0] in ("rnn", "rnn_state"):
                return self.rnn_result(n, base, idx)
            if isinstance(base, tuple) and base and base[0] == "attn":  # nn.MultiheadAttention's (out, weights)
                if _cv(idx) == 0:
                    return base[1]
                return ("attn_weights",)  # not computed: refused where something reads it
            if isinstance(base, tuple) and base and base[0] == "split":  # one piece of x.split(...)
                _, src, dim, bounds = base
                i = int(_cv(idx))
                lo, hi = bounds[i]
                items = [slice(None)] * dim + [slice(lo, hi)]
                return self._slice_copy(n, src, tuple(items), val)
            if type(base) is Ref:
                return self._slice_copy(n, base, idx, val)
            raise self.fail(n, "indexing a tensor")
        if name == "getattr":
            base, attr = args
            if isinstance(base, tuple) and base and base[0] == "minmax" and attr == "values":
                return base[1]
            if attr == "T" and isinstance(base, int):
                shp = self.shape(base)
                if len(shp) != 2:
                    raise self.fail(n, ".T of a non-2-D tensor")
                return g.add("transpose", [base], {}, (shp[1], shp[0]), origin=n.name)
            raise self.fail(n, f"attribute .{attr}")
        if name in _UNARY_FUNCS:
            return self.unary(_UNARY_FUNCS[name], x, n)
        if name == "gelu":
            approx = kw.get("approximate", args[1] if len(args) > 1 else "none")
            return self.unary("gelu_tanh" if approx == "tanh" else "gelu", x, n)
        if name == "leaky_relu":
            slope = kw.get("negative_slope", args[1] if len(args) > 1 else 0.01)
            return self.unary("leaky_relu", x, n, slope=float(_cv(slope)))
        if name == "elu":
            alpha = kw.get("alpha", args[1] if len(args) > 1 else 1.0)
            return self.unary("elu", x, n, alpha=float(_cv(alpha)))
        if name == "softplus":
            beta = kw.get("beta", args[1] if len(args) > 1 else 1.0)
            thr = kw.get("threshold", args[2] if len(args) > 2 else 20.0)
            return self.unary("softplus", x, n, beta=float(_cv(beta)), threshold=float(_cv(thr)))
        if name in ("clamp", "clip", "hardtanh"):
            lo_default, hi_default = (-1.0, 1.0) if name == "hardtanh" else (None, None)
            lo = kw.get("min", kw.get("min_val", args[1] if len(args) > 1 else lo_default))
            hi = kw.get("max", kw.get("max_val", args[2] if len(args) > 2 else hi_default))
            lo, hi = _cv(lo), _cv(hi)
            return self.unary("clamp", x, n, lo=None if lo is None else float(lo), hi=None if hi is None else float(hi))
        if name in ("eq", "ne") and len(args) == 2 and type(args[0]) is Ref and isinstance(_wrap(args[1]), Const):
            # a comparison with a constant: only a masked_fill reads it (a boolean tensor is not materialised)
            return ("compare", name, args[0], float(_cv(_wrap(args[1]))))
        if name == "masked_fill":
            mask = args[1] if len(args) > 1 else kw.get("mask")
            value = _cv(_wrap(args[2] if len(args) > 2 else kw.get("value")))
            if not (isinstance(mask, tuple) and mask and mask[0] == "compare"):
                raise self.fail(n, "masked_fill with other than a comparison of a tensor with a constant as its mask")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(n, "masked_fill with a tensor value")
            _, cmp, m, c = mask
            if type(x) is not Ref:
                raise self.fail(n, "masked_fill of a constant")
            if broadcast_shape(self.shape(x), self.shape(m)) != self.shape(x):
                raise self.fail(n, f"masked_fill whose mask {self.shape(m)} widens {self.shape(x)}")
            return self.g.add("binary", [x, m], {"fn": f"fill_{cmp}", "c": c, "fill": float(value)}, self.shape(x),
                              origin=n.name)
        if name in ("add", "sub", "subtract") and "alpha" in kw:
            raise self.fail(n, "add/sub with alpha")
        if name in _BINARY:
            a = args[0]
            b = args[1] if len(args) > 1 else kw.get("other", kw.get("exponent"))
            return self.binary(_BINARY[name], _wrap(a), _wrap(b), n)
        if name in ("neg",):
            return self.unary("neg", x, n)
        return UNHANDLED

    def _call_reduction(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Reductions, softmax/log_softmax, logsumexp, norms, layer norm."""
        g = self.g
        x = args[0] if args else kw.get("input")
        if name in ("sum", "mean", "amax", "amin", "max", "min"):
            dim = kw.get("dim", kw.get("axis", args[1] if len(args) > 1 else None))
            keep = bool(kw.get("keepdim", args[2] if len(args) > 2 else False))
            if name in ("max", "min") and len(args) > 1 and (type(args[1]) is Ref or isinstance(args[1], Const)):
                return self.binary(name, x, args[1], n)
            fn = {"max": "amax", "min": "amin"}.get(name, name)
            if name in ("max", "min") and dim is None:
                return self.reduce(fn, x, None, False, n)
            r = self.reduce(fn, x, dim, keep, n)
            if name in ("max", "min"):
                return ("minmax", r)
            return r
        if name in ("softmax", "log_softmax"):
            dim = kw.get("dim", args[1] if len(args) > 1 else None)
            return self.softmax(x, _norm_dim(dim, self.shape(x), n, self), n, log=name == "log_softmax")
        if name == "logsumexp":
            dim = kw.get("dim", args[1] if len(args) > 1 else None)
            keep = bool(kw.get("keepdim", args[2] if len(args) > 2 else False))
            return self.logsumexp(x, dim, keep, n)
        if name in ("norm", "vector_norm"):
            p = kw.get("p", kw.get("ord", args[1] if len(args) > 1 else 2))
            dim = kw.get("dim", args[2] if len(args) > 2 else None)
            keep = bool(kw.get("keepdim", args[3] if len(args) > 3 else False))
            if _cv(p) not in (2, 2.0, "fro"):
                raise self.fail(n, f"norm with p={p}")
            s = self.reduce("sum", self.unary("square", x, n), dim, True, n)
            r = self.unary("sqrt", s, n)
            if not keep:
                r = g.add("reshape", [r], {}, tuple(val.shape), origin=n.name)
            return r
        if name == "normalize":  # F.normalize: x / max(||x||_p over dim, eps)
            p = _cv(kw.get("p", args[1] if len(args) > 1 else 2.0))
            dim = _cv(kw.get("dim", args[2] if len(args) > 2 else 1))
            eps = float(_cv(kw.get("eps", args[3] if len(args) > 3 else 1e-12)))
            if p not in (2, 2.0) or kw.get("out") is not None:
                raise self.fail(n, f"normalize with p={p}")
            d = int(dim) % len(self.shape(x))
            norm = self.unary("sqrt", self.reduce("sum", self.unary("square", x, n), [d], True, n), n)
            return self.binary("div", x, self.unary("clamp", norm, n, lo=eps, hi=None), n)
        if name == "layer_norm":
            nshape = args[1] if len(args) > 1 else kw["normalized_shape"]
            w = kw.get("weight", args[2] if len(args) > 2 else None)
            b = kw.get("bias", args[3] if len(args) > 3 else None)
            eps = kw.get("eps", args[4] if len(args) > 4 else 1e-5)
            return self.layer_norm(x, nshape, w, b, float(_cv(eps)), n)
        return UNHANDLED

    def _call_loss(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Losses (mse, cross entropy, smooth L1/Huber, KL divergence) and scalar tensors."""
        g = self.g
        if name == "mse_loss":
            red = kw.get("reduction", "mean")
            d = self.unary("square", self.binary("sub", args[0], args[1] if len(args) > 1 else kw["target"], n), n)
            if red == "none":
                return d
            return self.reduce("mean" if red == "mean" else "sum", d, None, False, n)
        if name == "cross_entropy":
            logits = args[0]
            target = args[1] if len(args) > 1 else kw["target"]
            if any(k in kw for k in ("weight", "label_smoothing")) and (kw.get("weight") is not None or kw.get("label_smoothing", 0.0)):
                raise self.fail(n, "cross_entropy with class weights or label smoothing")
            if kw.get("reduction", "mean") != "mean" or len(self.shape(logits)) != 2:
                raise self.fail(n, "cross_entropy other than mean over (N, C) logits")
            if g.nodes[target].dtype != "i64":
                raise self.fail(n, "cross_entropy with probability targets")
            # cross_entropy is log_softmax underneath: no masked shift, an infinite logit gives NaN as in PyTorch
            lse = self.logsumexp(logits, -1, True, n, mask_inf=False)
            # a target equal to ignore_index (default -100, the padding of a batch) counts neither in the sum nor in
            # the mean's count (and is never read as a class)
            ignore = int(_cv(kw.get("ignore_index", -100)))
            picked = g.add("gather_last", [logits, target], {"ignore_index": ignore}, self.shape(lse), origin=n.name)
            return self.reduce("mean", self.binary("sub", lse, picked, n), None, False, n)
        if name in ("tensor", "scalar_tensor", "as_tensor") and args and isinstance(args[0], (Const, int, float)) \
                and not isinstance(args[0], bool) and tuple(val.shape) == ():
            return _wrap(args[0])  # torch.tensor(0.5, device=x.device): a scalar constant
        if name in ("smooth_l1_loss", "huber_loss"):
            p, t = args[0], args[1] if len(args) > 1 else kw["target"]
            red = kw.get("reduction", "mean")
            beta = float(_cv(kw.get("beta", kw.get("delta", 1.0))))
            d = self.unary("abs", self.binary("sub", p, t, n), n)
            m = self.binary("min", d, self.c(beta), n)
            # smooth L1: 0.5 m^2 / beta + (d - m), m = min(d, beta); Huber is beta times it
            quad = self.binary("mul", self.unary("square", m, n), self.c(0.5 / beta), n)
            loss = self.binary("add", quad, self.binary("sub", d, m, n), n)
            if name == "huber_loss":
                loss = self.binary("mul", loss, self.c(beta), n)
            return loss if red == "none" else self.reduce("mean" if red == "mean" else "sum", loss, None, False, n)
        if name == "kl_div":
            inp, t = args[0], args[1] if len(args) > 1 else kw["target"]
            red = kw.get("reduction", "mean")
            log_target = bool(kw.get("log_target", False))
            if log_target:
                pointwise = self.binary("mul", self.unary("exp", t, n), self.binary("sub", t, inp, n), n)
            else:
                pointwise = self.binary("mul", t, self.binary("sub", self.unary("log", t, n), inp, n), n)
            if red == "none":
                return pointwise
            total = self.reduce("sum", pointwise, None, False, n)
            if red == "sum":
                return total
            count = self.shape(inp)[0] if red == "batchmean" else math.prod(self.shape(inp))
            return self.binary("div", total, self.c(float(count)), n)
        return UNHANDLED

    def _call_matmul(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Attention, einsum, matmuls, linear, transposes, triangle masks, arg-reductions."""
        g = self.g
        x = args[0] if args else kw.get("input")
        if name == "scaled_dot_product_attention":
            q, k_, v = args[0], args[1], args[2]
            if any(kw.get(key) not in (None, False, 0.0) for key in ("attn_mask", "is_causal", "dropout_p", "enable_gqa")):
                raise self.fail(n, "attention with a mask, causal mask, dropout or GQA")
            scale = kw.get("scale")
            scale = float(_cv(scale)) if scale is not None else 1.0 / math.sqrt(self.shape(q)[-1])
            s_ = self.binary("mul", self.gemm(q, k_, n, trans_b=True), self.c(scale), n)
            return self.gemm(self.softmax(s_, len(self.shape(s_)) - 1, n), v, n)
        if name == "einsum":
            return self._einsum(n, args, val)
        if name in ("triu", "tril"):
            diag = int(_cv(kw.get("diagonal", args[1] if len(args) > 1 else 0)))
            if len(self.shape(x)) < 2:
                raise self.fail(n, f"{name} of a 1-D tensor")
            return g.add("trimask", [x], {"upper": name == "triu", "diagonal": diag}, self.shape(x), origin=n.name)
        if name in ("argmax", "argmin"):
            dim = kw.get("dim", args[1] if len(args) > 1 else None)
            keep = bool(kw.get("keepdim", args[2] if len(args) > 2 else False))
            if dim is None:
                raise self.fail(n, f"{name} over the flattened tensor")
            shp = self.shape(x)
            d = int(_cv(dim)) % len(shp)
            kshape = tuple(1 if i == d else s_ for i, s_ in enumerate(shp))
            r = g.add("argreduce", [x], {"fn": name, "dim": d}, kshape, dtype="i64", origin=n.name)
            if not keep:
                r = g.add("reshape", [r], {}, tuple(val.shape), dtype="i64", origin=n.name)
            return r
        if name in ("matmul", "bmm", "mm"):
            return self.gemm(args[0], args[1], n)
        if name == "linear":
            w = args[1] if len(args) > 1 else kw["weight"]
            b = kw.get("bias", args[2] if len(args) > 2 else None)
            y = self.gemm(x, w, n, trans_b=True)
            return self.binary("add", y, b, n) if b is not None else y
        if name in ("transpose", "swapaxes"):
            shp = self.shape(x)
            d0, d1 = sorted(d % len(shp) for d in (args[1], args[2]))
            if (d0, d1) != (len(shp) - 2, len(shp) - 1):
                perm = list(range(len(shp)))
                perm[d0], perm[d1] = d1, d0
                return self._permute_copy(n, x, perm, val)
            return g.add("transpose", [x], {}, tuple(val.shape), origin=n.name)
        if name == "permute":
            shp = self.shape(x)
            dims = args[1:] if len(args) > 1 else kw["dims"]
            if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
                dims = dims[0]
            perm = [int(_cv(d)) % len(shp) for d in dims]
            if perm == list(range(len(shp))):
                return x
            if perm == list(range(len(shp) - 2)) + [len(shp) - 1, len(shp) - 2]:
                return g.add("transpose", [x], {}, tuple(val.shape), origin=n.name)
            return self._permute_copy(n, x, perm, val)
        if name == "t":
            return g.add("transpose", [x], {}, tuple(val.shape), origin=n.name)
        return UNHANDLED

    def _slice_copy(self, n: fx.Node, x: Any, idx: Any, val: Any) -> Any:
        """``x[...]`` with integers, slices of positive step and ``...`` (``out[:, -1, :]``): a strided copy
        (``slice_copy``, family layout) whose output dim ``d`` reads the input at ``base + i * pst[d]``; an index
        that keeps everything is ``x`` itself."""
        shp = self.shape(x)
        items = list(idx) if isinstance(idx, tuple) else [idx]
        if sum(1 for it in items if it is Ellipsis) > 1:
            raise self.fail(n, "an index with several ...")
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at:at + 1] = [slice(None)] * (len(shp) - len(items) + 1)
        if len(items) > len(shp):
            raise self.fail(n, f"an index of {len(items)} dims on a {len(shp)}-D tensor")
        items += [slice(None)] * (len(shp) - len(items))
        strides = [math.prod(shp[d + 1:]) for d in range(len(shp))]
        base, pst, out = 0, [], []
        for d, it in enumerate(items):
            if isinstance(it, slice):
                parts = [_cv(v) for v in (it.start, it.stop, it.step)]
                if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v))
                       for v in parts):
                    raise self.fail(n, "a slice with tensor or non-integer bounds")
                start, stop, step = slice(*(None if v is None else int(v) for v in parts)).indices(shp[d])
                if step <= 0:
                    raise self.fail(n, "a slice with a step below 1")
                base += start * strides[d]
                pst.append(strides[d] * step)
                out.append(len(range(start, stop, step)))
            else:
                i = _cv(it)
                if isinstance(i, bool) or not isinstance(i, (int, float)) or i != int(i):
                    raise self.fail(n, f"indexing with {type(it).__name__} (None, tensors and masks are not supported)")
                i = int(i)
                if not -shp[d] <= i < shp[d]:
                    raise self.fail(n, f"index {i} out of range for dim {d} of size {shp[d]}")
                base += (i % shp[d]) * strides[d]
        if tuple(out) != tuple(val.shape):
            raise self.fail(n, f"the index gives {tuple(out)}, the reference {tuple(val.shape)}")
        if tuple(out) == tuple(shp):
            return x
        if not out or 0 in out:
            raise self.fail(n, "an index that selects a scalar or nothing")
        return self.g.add("slice_copy", [x], {"base": base, "pst": pst}, tuple(out), origin=n.name)

    def _strided_copy(self, n: fx.Node, x: Any, base: int, pst: list[int], out: tuple[int, ...]) -> Any:
        """A copy kernel whose output dim ``d`` reads the (contiguous, float) input at ``base + i * pst[d]``
        (``slice_copy``, family layout): indexing, broadcasting (stride 0) and sliding windows."""
        if type(x) is not Ref or self.g.nodes[x].dtype != "f32":
            raise self.fail(n, "a strided copy of other than a float tensor")
        if not out or 0 in out:
            raise self.fail(n, "a copy of nothing")
        return self.g.add("slice_copy", [x], {"base": base, "pst": pst}, tuple(out), origin=n.name)

    def _split(self, n: fx.Node, name: str, x: Any, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """``x.split(size, dim)`` / ``x.chunk(k, dim)`` (query, key and value out of one projection): nothing is
        computed until a piece is indexed, which is then a strided copy of its range of ``dim``."""
        if type(x) is not Ref:
            raise self.fail(n, f"{name} of a constant")
        dim = _cv(kw.get("dim", args[2] if len(args) > 2 else 0))
        if not isinstance(val, (tuple, list)) or not isinstance(dim, int) or isinstance(dim, bool):
            raise self.fail(n, f"{name} with a non-integer dim")
        shp = self.shape(x)
        d = dim % len(shp)
        bounds, at = [], 0
        for piece in val:
            size = int(piece.shape[d])
            bounds.append((at, at + size))
            at += size
        if at != shp[d] or any(tuple(p.shape[:d]) + tuple(p.shape[d + 1:]) != tuple(shp[:d]) + tuple(shp[d + 1:])
                               for p in val):
            raise self.fail(n, f"{name} gives pieces that do not tile {shp} along dim {d}")
        return ("split", x, d, bounds)

    def _expand_copy(self, n: fx.Node, x: Any, val: Any) -> Any:
        """``x.expand(...)`` / ``expand_as`` / ``broadcast_to`` (a class token repeated over the batch): the
        broadcast dims are read at stride 0 into a contiguous copy."""
        if type(x) is not Ref:
            raise self.fail(n, "expand of a constant")
        shp, out = self.shape(x), tuple(val.shape)
        lead = len(out) - len(shp)
        if lead < 0 or any(s_ not in (1, o) for s_, o in zip(shp, out[lead:])):
            raise self.fail(n, f"expand of {shp} to {out}")
        if out == tuple(shp):
            return x
        strides = [math.prod(shp[d + 1:]) for d in range(len(shp))]
        pst = [0] * lead + [0 if shp[d] == 1 and out[lead + d] != 1 else strides[d] for d in range(len(shp))]
        return self._strided_copy(n, x, 0, pst, out)

    def _unfold_copy(self, n: fx.Node, x: Any, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """``x.unfold(dim, size, step)`` (the patches of a vision transformer): dim ``dim`` becomes the window index
        (read at ``step`` times its stride) and a last dim of ``size`` reads the window's elements."""
        if type(x) is not Ref:
            raise self.fail(n, "unfold of a constant")
        get = lambda key, i: _cv(kw.get(key, args[i] if len(args) > i else None))
        dim, size, step = get("dimension", 1), get("size", 2), get("step", 3)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (dim, size, step)) or size < 1 or step < 1:
            raise self.fail(n, "unfold with non-integer dimension, size or step")
        shp = self.shape(x)
        d = dim % len(shp)
        strides = [math.prod(shp[i + 1:]) for i in range(len(shp))]
        windows = (shp[d] - size) // step + 1
        out = tuple(shp[:d]) + (windows,) + tuple(shp[d + 1:]) + (size,)
        if out != tuple(val.shape):
            raise self.fail(n, f"unfold gives {out}, the reference {tuple(val.shape)}")
        pst = strides[:d] + [strides[d] * step] + strides[d + 1:] + [strides[d]]
        return self._strided_copy(n, x, 0, pst, out)

    def _copy_into_attribute(self, n: fx.Node, dst: Any, src: Any) -> Any:
        """``self.hidden.copy_(h0)``: a tensor the module holds, overwritten before anything read it -- every later
        read of that attribute is ``src`` (the value the reference computes with). Other in-place copies (into an
        input, an intermediate, or a tensor already read, whose readers would see the new value) are refused."""
        dn = self.g.nodes[dst] if type(dst) is Ref else None
        if dn is None or dn.op != "param" or type(src) is not Ref:
            raise self.fail(n, "copy_ other than of a tensor into a tensor the module holds")
        if self.shape(src) != dn.shape:
            raise self.fail(n, f"copy_ of {self.shape(src)} into {dn.shape} (a broadcasting copy)")
        if any(dst in m.args for m in self.g.nodes):
            raise self.fail(n, f"copy_ into {dn.attrs['path']} after it was read")
        self.params[dn.attrs["path"]] = src
        return src

    def _permute_copy(self, n: fx.Node, x: Any, perm: list[int], val: Any) -> Any:
        """A permutation of other dims than the last two, materialised by a copy kernel (``permute_copy``, family
        ``layout``): what reads it sees a contiguous tensor (a channel shuffle's ``view`` after ``transpose``)."""
        if type(x) is not Ref or self.g.nodes[x].dtype != "f32":
            raise self.fail(n, "permutation of other than a float tensor")
        return self.g.add("permute_copy", [x], {"perm": perm}, tuple(val.shape), origin=n.name)

    def _call_conv_pool_norm(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Convolutions, pooling, batch/instance/group norm."""
        x = args[0] if args else kw.get("input")
        if name in ("conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d") or (
                name == "conv2d" and _cv(kw.get("groups", args[6] if len(args) > 6 else 1)) != 1):
            w = args[1] if len(args) > 1 else kw["weight"]
            b = kw.get("bias", args[2] if len(args) > 2 else None)
            get = lambda key, i, default: kw.get(key, args[i] if len(args) > i else default)
            if name.startswith("conv_transpose"):
                # (input, weight, bias, stride, padding, output_padding, groups, dilation)
                return self._convnd(n, [x, w] + ([b] if b is not None else []), get("stride", 3, 1),
                                    get("padding", 4, 0), get("dilation", 7, 1), get("groups", 6, 1), True,
                                    get("output_padding", 5, 0))
            return self._convnd(n, [x, w] + ([b] if b is not None else []), get("stride", 3, 1), get("padding", 4, 0),
                                get("dilation", 5, 1), get("groups", 6, 1), False, 0)
        if name in ("max_pool1d", "max_pool3d", "avg_pool1d", "avg_pool3d"):
            kind = "avg" if "avg" in name else "max"
            if kw.get("return_indices"):
                raise self.fail(n, "max pooling with indices")
            get = lambda key, i, default: kw.get(key, args[i] if len(args) > i else default)
            if kind == "max":
                return self._poolnd(n, kind, x, get("kernel_size", 1, None), get("stride", 2, None), get("padding", 3, 0),
                                    get("dilation", 4, 1), get("ceil_mode", 5, False), True, None)
            return self._poolnd(n, kind, x, get("kernel_size", 1, None), get("stride", 2, None), get("padding", 3, 0), 1,
                                get("ceil_mode", 4, False), get("count_include_pad", 5, True),
                                get("divisor_override", 6, None))
        if name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
                    "adaptive_max_pool2d", "adaptive_max_pool3d"):
            if kw.get("return_indices"):
                raise self.fail(n, "adaptive max pooling with indices")
            return self._adaptive_pool(n, "max" if "max" in name else "avg", x)
        if name == "batch_norm":
            get = lambda key, i, default: kw.get(key, args[i] if len(args) > i else default)
            rm, rv, w, b = get("running_mean", 1, None), get("running_var", 2, None), get("weight", 3, None), get("bias", 4, None)
            training = bool(_cv(get("training", 5, False)))
            if (w is None) != (b is None):
                raise self.fail(n, "batch norm with only one of weight and bias")
            update = None
            if training and rm is not None and rv is not None:  # F.batch_norm updates the given statistics in place
                update = ([rm, rv, None], float(_cv(get("momentum", 6, 0.1))))
            if training or rm is None:
                rm = rv = None
            return self._batch_norm(n, x, w, b, rm, rv, float(_cv(get("eps", 7, 1e-5))), update)
        if name == "instance_norm":
            get = lambda key, i, default: kw.get(key, args[i] if len(args) > i else default)
            w, b = get("weight", 3, None), get("bias", 4, None)
            if (w is None) != (b is None):
                raise self.fail(n, "instance norm with only one of weight and bias")
            return self._instance_norm(n, x, w, b, float(_cv(get("eps", 7, 1e-5))))
        if name in ("conv2d",):
            w = args[1]
            b = kw.get("bias", args[2] if len(args) > 2 else None)
            return self._conv(n, [x, w] + ([b] if b is not None else []),
                              kw.get("stride", args[3] if len(args) > 3 else 1),
                              kw.get("padding", args[4] if len(args) > 4 else 0),
                              kw.get("dilation", args[5] if len(args) > 5 else 1))
        if name in ("max_pool2d", "_max_pool2d", "avg_pool2d", "max_pool2d_with_indices"):
            kind = "avg" if "avg" in name else "max"
            if kw.get("return_indices"):
                raise self.fail(n, "max_pool2d with indices")
            k = kw.get("kernel_size", args[1] if len(args) > 1 else None)
            s = kw.get("stride", args[2] if len(args) > 2 else None)
            p = kw.get("padding", args[3] if len(args) > 3 else 0)
            if kind == "max":
                d = kw.get("dilation", args[4] if len(args) > 4 else 1)
                ceil = kw.get("ceil_mode", args[5] if len(args) > 5 else False)
                return self._pool(n, kind, x, k, s, p, d, ceil, True, None)
            ceil = kw.get("ceil_mode", args[4] if len(args) > 4 else False)
            inc = kw.get("count_include_pad", args[5] if len(args) > 5 else True)
            div = kw.get("divisor_override", args[6] if len(args) > 6 else None)
            return self._pool(n, kind, x, k, s, p, 1, ceil, inc, div)
        if name == "group_norm":
            groups = args[1] if len(args) > 1 else kw["num_groups"]
            w = kw.get("weight", args[2] if len(args) > 2 else None)
            b = kw.get("bias", args[3] if len(args) > 3 else None)
            eps = kw.get("eps", args[4] if len(args) > 4 else 1e-5)
            return self._group_norm(n, x, int(groups), w, b, float(_cv(eps)))
        return UNHANDLED

    def _call_scan_view(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        """Flips, scans (cumsum, reverse cumsum, cumprod), concatenation and views."""
        g = self.g
        x = args[0] if args else kw.get("input")
        if name == "copy_" and n.op == "call_method":
            return self._copy_into_attribute(n, x, args[1] if len(args) > 1 else kw.get("src"))
        if name in ("cat", "concat", "concatenate"):
            xs = list(args[0] if args else kw["tensors"])
            dim = kw.get("dim", kw.get("axis", args[1] if len(args) > 1 else 0))
            if not xs or not all(type(t) is Ref and g.nodes[t].dtype == "f32" for t in xs):
                raise self.fail(n, f"{name} of other than float tensors")
            shp = tuple(val.shape)
            if len(xs) == 1:
                return xs[0]
            return g.add("cat", xs, {"dim": int(_cv(dim)) % len(shp)}, shp, origin=n.name)
        if name == "stack":  # a concatenation of the tensors, each viewed with a unit dim at ``dim``
            xs = list(args[0] if args else kw["tensors"])
            shp = tuple(val.shape)
            d = int(_cv(kw.get("dim", args[1] if len(args) > 1 else 0))) % len(shp)
            if not xs or not all(type(t) is Ref and g.nodes[t].dtype == "f32" for t in xs):
                raise self.fail(n, "stack of other than float tensors")
            unit = shp[:d] + (1,) + shp[d + 1:]
            parts = [g.add("reshape", [t], {}, unit, origin=n.name) for t in xs]
            return parts[0] if len(parts) == 1 else g.add("cat", parts, {"dim": d}, shp, origin=n.name)
        if name == "flip":
            dims = args[1] if len(args) > 1 else kw["dims"]
            dims = [dims] if isinstance(dims, int) else list(dims)
            src = g.nodes[x]
            if src.op == "cumsum" and src.attrs.get("flipped_out") and [d % len(src.shape) for d in dims] == [src.attrs["dim"]]:
                return g.add("cumsum", list(src.args), {"dim": src.attrs["dim"], "reverse": True}, src.shape,
                             origin=n.name)
            return g.add("flip", [x], {"dims": [d % len(self.shape(x)) for d in dims]}, self.shape(x), origin=n.name)
        if name == "cumprod":
            dim = int(_cv(kw.get("dim", args[1] if len(args) > 1 else None))) % len(self.shape(x))
            return g.add("cumsum", [x], {"dim": dim, "reverse": False, "fn": "prod"}, self.shape(x), origin=n.name)
        if name == "cumsum":
            dim = kw.get("dim", args[1] if len(args) > 1 else None)
            dim = int(dim) % len(self.shape(x))
            src = g.nodes[x]
            if src.op == "flip":
                if src.attrs["dims"] != [dim]:
                    raise self.fail(n, "cumsum of a flip along another dim")
                # cumsum(x.flip(d), d) is the suffix sum of x read backwards: only the pattern
                # cumsum(x.flip(d), d).flip(d) (a reverse cumsum) is supported
                return g.add("cumsum", [src.args[0]], {"dim": dim, "reverse": True, "flipped_out": True},
                             self.shape(x), origin=n.name)
            return g.add("cumsum", [x], {"dim": dim, "reverse": False}, self.shape(x), origin=n.name)
        if name in ("split", "chunk"):
            return self._split(n, name, x, args, kw, val)
        if name in ("expand", "expand_as", "broadcast_to"):
            return self._expand_copy(n, x, val)
        if name == "unfold" and n.op == "call_method":  # Tensor.unfold (windows); F.unfold (im2col) is another op
            return self._unfold_copy(n, x, args, kw, val)
        if name in _VIEW_METHODS:
            if not isinstance(x, int):
                raise self.fail(n, "view of a constant")
            src = g.nodes[x]
            if name in ("contiguous", "float", "clone", "detach", "to") and tuple(val.shape) == src.shape:
                if name in ("to", "float") and val.dtype != self.fdtype:
                    raise self.fail(n, "dtype conversion")
                return x
            if src.op == "transpose":
                raise self.fail(n, "reshape of a transposed view")
            return g.add("reshape", [x], {}, tuple(val.shape), origin=n.name)
        return UNHANDLED
