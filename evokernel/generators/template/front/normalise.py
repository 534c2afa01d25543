"""The fx graph normalised into the IR (:mod:`.graph`): leaves, parameters, elementwise ops, reductions and the
composites every back end sees decomposed (softmax, log_softmax, logsumexp, layer_norm, gemm with a transposed
operand folded in). ``call_module`` nodes are lowered by :class:`~.modules.ModuleOps`, function and method calls by
:class:`~.calls.CallOps`; both are mixins of :class:`Normaliser` and reach these helpers through ``self``.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import fx, nn

from evokernel.generators.template.front.calls import CallOps
from evokernel.generators.template.front.fxops import _DISPATCHED, _cv, _fold
from evokernel.generators.template.front.graph import AnalysisError, Const, Graph, Ref, broadcast_shape
from evokernel.generators.template.front.modules import ModuleOps


class Normaliser(ModuleOps, CallOps):
    """An fx graph (with its recorded meta values) normalised into the IR: the leaves and the dispatch here, the
    modules in :class:`~.modules.ModuleOps`, the functions and methods in :class:`~.calls.CallOps`."""

    def __init__(self, gm: fx.GraphModule, values: dict[str, Any], model: nn.Module, half: bool = False,
                 constant_args: set[str] | None = None):
        self.gm = gm
        self.fdtype = torch.float16 if half else torch.float32
        self.values = values
        self.model = model
        self.g = Graph()
        self.env: dict[str, Any] = {}  # fx node name -> node id | Const | python value | ("tuple", ...)
        self.params: dict[str, int] = {}
        self.constant_args = constant_args or set()

    # helpers
    def shape(self, ref: Any) -> tuple[int, ...]:
        return self.g.nodes[ref].shape if isinstance(ref, int) else ()

    def fail(self, n: fx.Node, why: str) -> AnalysisError:
        return AnalysisError(f"unsupported op at FX node {n.name!r} ({n.op} {self._tname(n)}): {why}")

    @staticmethod
    def _tname(n: fx.Node) -> str:
        t = n.target
        if isinstance(t, str):
            return t
        return getattr(t, "__name__", str(t))

    def param(self, path: str) -> int:
        if path in self.params:
            return self.params[path]
        obj: Any = self.model
        for part in path.split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor):
            raise AnalysisError(f"attribute {path} is not a tensor")
        i64 = obj.dtype == torch.int64 and path.endswith("num_batches_tracked")  # a norm's counter (written)
        if obj.dtype != self.fdtype and not i64:
            raise AnalysisError(f"parameter {path} has dtype {obj.dtype}; only {self.fdtype} is supported here")
        nid = self.g.add("param", [], {"path": path}, tuple(obj.shape), dtype="i64" if i64 else "f32", origin=path)
        self.params[path] = nid
        return nid

    def arg(self, a: Any) -> Any:
        if isinstance(a, fx.Node):
            v = self.env[a.name]
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        if isinstance(a, slice):  # x[:, :T] with a traced size T: its bound is the recorded constant
            return slice(self.arg(a.start), self.arg(a.stop), self.arg(a.step))
        return a

    # elementwise builders
    def unary(self, fn: str, x: Any, n: fx.Node, **attrs: Any) -> Any:
        if type(x) is not Ref:
            raise self.fail(n, "elementwise op on a Python constant")
        nd = self.g.nodes[x]
        return self.g.add("unary", [x], {"fn": fn, **attrs}, nd.shape, origin=n.name)

    def binary(self, fn: str, a: Any, b: Any, n: fx.Node) -> Any:
        if fn == "rsub":
            fn, a, b = "sub", b, a
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(_fold(fn, a.value, b.value))
        if fn == "pow":
            if not isinstance(b, Const):
                raise self.fail(n, "pow with a tensor exponent")
            if b.value == 2.0:
                return self.g.add("unary", [a], {"fn": "square"}, self.shape(a), origin=n.name)
            if b.value == 1.0:
                return a
            if b.value == 0.5:
                return self.g.add("unary", [a], {"fn": "sqrt"}, self.shape(a), origin=n.name)
            if b.value == -0.5:
                return self.g.add("unary", [a], {"fn": "rsqrt"}, self.shape(a), origin=n.name)
            return self.g.add("unary", [a], {"fn": "powc", "p": b.value}, self.shape(a), origin=n.name)
        for ref in (a, b):
            if isinstance(ref, int) and self.g.nodes[ref].dtype != "f32":
                raise self.fail(n, "arithmetic on integer tensors")
        shape = broadcast_shape(self.shape(a), self.shape(b))
        return self.g.add("binary", [a, b], {"fn": fn}, shape, origin=n.name)

    def reduce(self, fn: str, x: int, dims: Any, keepdim: bool, n: fx.Node) -> int:
        shp = self.shape(x)
        dims = _cv(dims)
        if isinstance(dims, (list, tuple)):
            dims = [int(_cv(d)) for d in dims]
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            rdims = None
            kshape = tuple(1 for _ in shp)
        else:
            if isinstance(dims, int):
                dims = [dims]
            rdims = sorted({d % len(shp) for d in dims})
            kshape = tuple(1 if i in rdims else s for i, s in enumerate(shp))
            if all(shp[d] == 1 for d in rdims):
                # over dims of size 1 (x.sum(1, keepdim=True).max(1, keepdim=True)): sum, mean, max and min
                # are the identity
                if keepdim:
                    return x
                return self.g.add("reshape", [x], {}, tuple(s for i, s in enumerate(shp) if i not in rdims),
                                  origin=n.name)
        r = self.g.add("reduce", [x], {"fn": fn, "dims": rdims}, kshape, origin=n.name)
        if not keepdim:
            final = () if rdims is None else tuple(s for i, s in enumerate(shp) if i not in rdims)
            r = self.g.add("reshape", [r], {}, final, origin=n.name)
        return r

    def c(self, v: float) -> Const:
        return Const(float(v))

    # composites
    def softmax(self, x: int, dim: int, n: fx.Node, log: bool = False) -> int:
        m = self.reduce("amax", x, dim, True, n)
        d = self.binary("sub", x, m, n)
        e = self.unary("exp", d, n)
        s = self.reduce("sum", e, dim, True, n)
        if log:
            return self.binary("sub", d, self.unary("log", s, n), n)
        return self.binary("div", e, s, n)

    def logsumexp(self, x: int, dim: Any, keepdim: bool, n: fx.Node, mask_inf: bool = True) -> int:
        m = self.reduce("amax", x, dim, True, n)
        shift = lambda: m  # noqa: E731
        if mask_inf:
            # torch.logsumexp shifts by the row max with an infinite max replaced by 0, so a row holding +Inf
            # answers +Inf (not Inf - Inf = NaN) and an all -Inf row answers -Inf. A shift clamped to the dtype's
            # finite range gives the same answers with the IR's own ops (x - big: exp 0 for finite x, Inf stays
            # Inf; log 0 - big = -Inf) and leaves every finite shift as it was. Each use gets its own clamp, so
            # each fuses into the stage that uses it (one shared clamp would be a stage output of its own).
            big = self.c(float(torch.finfo(self.fdtype).max))
            neg = self.c(-float(torch.finfo(self.fdtype).max))
            shift = lambda: self.binary("min", self.binary("max", m, neg, n), big, n)  # noqa: E731
        e = self.unary("exp", self.binary("sub", x, shift(), n), n)
        s = self.reduce("sum", e, dim, True, n)
        r = self.binary("add", self.unary("log", s, n), shift(), n)
        if not keepdim:
            shp = self.shape(x)
            dims = [dim] if isinstance(dim, int) else list(dim)
            dd = {d % len(shp) for d in dims}
            r = self.g.add("reshape", [r], {}, tuple(s_ for i, s_ in enumerate(shp) if i not in dd), origin=n.name)
        return r

    def layer_norm(self, x: int, nshape: Any, w: Any, b: Any, eps: float, n: fx.Node) -> int:
        nshape = tuple(int(_cv(v)) for v in nshape) if isinstance(nshape, (list, tuple)) else (int(_cv(nshape)),)
        if len(nshape) > 1:
            # over several trailing dims: a view with those dims flattened, the norm over the last one,
            # and the result viewed back (the flattened weight and bias are views too)
            shp = self.shape(x)
            k = len(nshape)
            if tuple(shp[-k:]) != nshape:
                raise self.fail(n, f"layer_norm shape {nshape} is not the trailing dims of {shp}")
            size = 1
            for v in nshape:
                size *= v
            flat = lambda t: self.g.add("reshape", [t], {}, tuple(self.shape(t)[:-k]) + (size,), origin=n.name) \
                if isinstance(t, int) else t
            y = self.layer_norm(flat(x), (size,), flat(w) if w is not None else None,
                                flat(b) if b is not None else None, eps, n)
            return self.g.add("reshape", [y], {}, shp, origin=n.name)
        mu = self.reduce("mean", x, -1, True, n)
        d = self.binary("sub", x, mu, n)
        var = self.reduce("mean", self.unary("square", d, n), -1, True, n)
        inv = self.unary("rsqrt", self.binary("add", var, self.c(eps), n), n)
        y = self.binary("mul", d, inv, n)
        if w is not None:
            y = self.binary("mul", y, w, n)
        if b is not None:
            y = self.binary("add", y, b, n)
        return y

    def gemm(self, a: int, b: int, n: fx.Node, trans_b: bool = False) -> int:
        # b may be a transpose view of its last two dims
        bn = self.g.nodes[b]
        if bn.op == "transpose":
            b, trans_b = bn.args[0], not trans_b
        an = self.g.nodes[a]
        if an.op == "transpose":
            # the transposed left operand is materialised by a transpose kernel (layout family)
            a = self.g.add("transpose_copy", [an.args[0]], {}, an.shape, origin=n.name)
        sa, sb = self.shape(a), self.shape(b)
        if trans_b:
            sb = sb[:-2] + (sb[-1], sb[-2]) if len(sb) >= 2 else sb
        if len(sb) == 1:
            raise self.fail(n, "matmul with a 1-D right operand")
        if len(sa) == 1:
            raise self.fail(n, "matmul with a 1-D left operand")
        if sa[-1] != sb[-2]:
            raise self.fail(n, f"inner dimensions differ: {sa} @ {sb}")
        batch_a, batch_b = sa[:-2], sb[:-2]
        if batch_b and batch_a != batch_b:
            raise self.fail(n, "batched matmul with broadcast batch dims")
        if len(sa) > 2 and not batch_b:
            # (..., M, K) @ (K, N): fold the batch into M
            shape = sa[:-1] + (sb[-1],)
            batch = 1
            m = 1
            for s in sa[:-1]:
                m *= s
        else:
            shape = batch_a + (sa[-2], sb[-1])
            batch = 1
            for s in batch_a:
                batch *= s
            m = sa[-2]
        return self.g.add("gemm", [a, b], {"trans_b": trans_b, "batch": batch, "m": m, "n": sb[-1], "k": sa[-1]},
                          shape, origin=n.name)

    # main loop
    def run(self) -> Graph:
        for n in self.gm.graph.nodes:
            try:
                self.env[n.name] = self.visit(n)
            except AnalysisError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise self.fail(n, f"{type(exc).__name__}: {exc}") from None
        return self.g

    def visit(self, n: fx.Node) -> Any:
        val = self.values.get(n.name)
        if n.op == "placeholder":
            if val is None and n.name in self.constant_args:
                return None  # a forward parameter get_inputs() does not give, traced as its default (None)
            if not isinstance(val, torch.Tensor):
                raise self.fail(n, "non-tensor forward argument")
            dtype = "i64" if val.dtype == torch.int64 else "f32"
            self.g.input_names.append(n.name)
            return self.g.add("input", [], {"index": len(self.g.input_names) - 1, "name": n.name},
                              tuple(val.shape), dtype=dtype, origin=n.name)
        if n.op == "output":
            out = self.arg(n.args[0])
            if isinstance(out, (tuple, list)):
                raise self.fail(n, "models with several outputs")
            if not isinstance(out, int):
                raise self.fail(n, "the output is not a tensor")
            if self.g.nodes[out].op in ("input", "param"):
                raise self.fail(n, "the output is an input or a parameter (nothing to compute)")
            self.g.output = out
            return out
        if n.op == "get_attr":
            if isinstance(val, torch.Tensor):
                if str(n.target).startswith("_tensor_constant"):
                    # torch.tensor(c) in forward, made a constant by the tracer (outside the meta device)
                    const = getattr(self.gm, str(n.target))
                    if const.numel() == 1 and not const.is_meta and const.dtype.is_floating_point:
                        return Const(float(const.reshape(())))
                    raise self.fail(n, "a tensor constant created in forward (only scalars are supported)")
                return self.param(str(n.target))
            return val
        # non-tensor values (shapes, sizes, scalars computed from them) become constants
        if not isinstance(val, torch.Tensor) and not (isinstance(val, tuple) and any(isinstance(v, torch.Tensor) for v in val)):
            if isinstance(val, bool):
                return val
            if isinstance(val, (int, float)):
                return Const(float(val))
            return val
        if n.op == "call_module":
            return self.visit_module(n, self.gm.get_submodule(str(n.target)), str(n.target))
        if n.op == "call_method":
            name = n.target
        else:
            # boolean-dispatched functionals (F.max_pool2d, ...) all share the __name__ "fn"
            name = _DISPATCHED.get(id(n.target)) or getattr(n.target, "__name__", str(n.target))
        args = [self.arg(a) for a in n.args]
        kwargs = {k: self.arg(v) for k, v in n.kwargs.items()}
        return self.visit_call(n, str(name), args, kwargs, val)
