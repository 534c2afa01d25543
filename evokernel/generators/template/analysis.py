"""Task analysis: trace the reference ``Model`` with torch.fx, propagate shapes on the meta device and
normalise the graph into a small IR of primitive ops that the code generators understand.

The IR (:class:`Graph` of :class:`Node`) has

* leaves: ``input`` (a forward argument), ``param`` (a parameter/buffer reached by attribute path),
* elementwise ops: ``unary`` (attrs ``fn`` and its constants) and ``binary`` (``fn`` in add/sub/mul/div/
  max/min/pow); an argument is a node id (int) or a Python float constant wrapped in :class:`Const`,
* ``reduce`` (``fn`` in sum/mean/amax/amin, ``dims`` or ``None`` for all, always keepdim; a
  ``reshape`` node follows when the reference drops the dimension),
* ``gather_last`` (``x[r, t[r]]``), anchors ``gemm``, ``conv2d``, ``pool2d``, ``cumsum``,
  ``group_norm`` and the view op ``reshape``.

Composite operators (softmax, log_softmax, logsumexp, layer_norm, norms, losses, linear) are
decomposed here, so the stage builder only sees primitives. Anything else raises
:class:`AnalysisError` naming the FX node.
"""
from __future__ import annotations

import math
import operator
import types
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn

__all__ = ["AnalysisError", "Const", "Graph", "Node", "Ref", "analyze", "clear_cache"]


class AnalysisError(ValueError):
    """The task cannot be analysed (untraceable, unsupported op, unsupported layout)."""


@dataclass(frozen=True)
class Const:
    value: float


class Ref(int):
    """A node id (an int that is known to refer to a node, unlike a literal dim or size)."""


@dataclass
class Node:
    id: int
    op: str
    args: list[Any]
    attrs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str = "f32"  # f32 or i64
    origin: str = ""  # the FX node this came from (for messages)


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output: int = -1
    init_source: str = ""  # the reference Model.__init__ (rewritten for the candidate)
    init_params: list[str] = field(default_factory=list)
    half: bool = False  # analysed with allow_half: the inputs, parameters and output are float16

    def add(self, op: str, args: list[Any], attrs: dict[str, Any] | None, shape: tuple[int, ...],
            dtype: str = "f32", origin: str = "") -> int:
        n = Node(len(self.nodes), op, list(args), dict(attrs or {}), tuple(int(s) for s in shape), dtype, origin)
        self.nodes.append(n)
        return Ref(n.id)

    def users(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for a in n.args:
                if isinstance(a, int):
                    out[a].append(n.id)
        return out

    def ops(self) -> list[str]:
        return [n.op if n.op not in ("unary", "binary", "reduce") else f"{n.op}:{n.attrs.get('fn')}"
                for n in self.nodes]


_CACHE: dict[str, Graph] = {}


def clear_cache() -> None:
    _CACHE.clear()


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise AnalysisError(f"shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


# ----------------------------------------------------------------------------------------- tracing

def _exec_task(task: Any) -> types.ModuleType:
    module = types.ModuleType(f"evk_template_task_{task.key}")
    module.__file__ = str(task.path)
    try:
        exec(compile(task.source, str(task.path), "exec"), module.__dict__)
    except Exception as exc:  # noqa: BLE001 - a task that does not even import is out of scope
        raise AnalysisError(f"executing the task source failed: {type(exc).__name__}: {exc}") from None
    return module


class _Recorder(fx.Interpreter):
    """Runs the traced graph on meta tensors and keeps every node's value."""

    def __init__(self, gm: fx.GraphModule):
        super().__init__(gm)
        self.values: dict[str, Any] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        self.values[n.name] = value
        return value


def _init_source(model_cls: type) -> tuple[str, list[str]]:
    import ast
    import inspect
    import textwrap

    if "__init__" not in model_cls.__dict__:
        return "", []  # nn.Module's own: the candidate's default __init__ does the same
    try:
        src = textwrap.dedent(inspect.getsource(model_cls.__init__))
    except (OSError, TypeError):
        return "", []
    tree = ast.parse(src)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    params = [a.arg for a in fn.args.args[1:]]

    class Rewrite(ast.NodeTransformer):
        # torch.randn(*s) / torch.rand(*s) -> torch.empty(*s).normal_() / .uniform_(): the same draws
        # from the default generator, without touching torch compute names in the candidate
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            # super(Model, self) -> super(): the candidate's class is ModelNew, which is not a Model
            # (every real KernelBench file writes the two-argument form)
            if isinstance(f, ast.Name) and f.id == "super" and node.args:
                return ast.Call(func=f, args=[], keywords=[])
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch" \
                    and f.attr in ("randn", "rand") and not node.keywords:
                empty = ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr="empty", ctx=ast.Load()),
                                 args=node.args, keywords=[])
                method = "normal_" if f.attr == "randn" else "uniform_"
                return ast.Call(func=ast.Attribute(value=empty, attr=method, ctx=ast.Load()), args=[], keywords=[])
            return node

    fn = Rewrite().visit(fn)
    # type hints name things (typing.Any, a task's own types) the candidate does not import; they do nothing
    for a in ast.walk(fn):
        if isinstance(a, ast.arg):
            a.annotation = None
        elif isinstance(a, ast.AnnAssign):
            a.annotation = ast.Name("object", ast.Load())
    fn.returns = None
    fn = _inline_globals(fn, model_cls)
    ast.fix_missing_locations(fn)
    return ast.unparse(fn), params


_CANDIDATE_GLOBALS = {"torch", "nn", "super", "self"}


def _inline_globals(fn: Any, model_cls: type) -> Any:
    """The candidate is a module of its own: a module-level constant of the task that ``__init__``
    reads (a default argument, a size, a tuple) is inlined as its literal value; any other module-level
    name (a helper function, a class) cannot follow the code and is refused with its name."""
    import ast
    import builtins

    bound = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    bound |= {t.id for t in ast.walk(fn) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    glb = getattr(model_cls.__init__, "__globals__", {})

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if not isinstance(node.ctx, ast.Load) or node.id in bound or node.id in _CANDIDATE_GLOBALS:
                return node
            if node.id in glb:
                value = glb[node.id]
                if value is torch or value is nn:
                    return ast.copy_location(ast.Name("torch" if value is torch else "nn", ast.Load()), node)
                if isinstance(value, (bool, int, float, str, type(None))) or (
                        isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value)):
                    return ast.copy_location(ast.Constant(value) if not isinstance(value, tuple) else
                                             ast.parse(repr(value), mode="eval").body, node)
                raise AnalysisError(f"Model.__init__ uses the module-level name {node.id!r} "
                                    f"({type(value).__name__}), which a generated candidate cannot carry over")
            if hasattr(builtins, node.id):
                return node
            raise AnalysisError(f"Model.__init__ uses the undefined name {node.id!r}")

    return Inline().visit(fn)


def analyze(task: Any, allow_half: bool = False) -> Graph:
    """Analyse ``task`` (cached by ``task.key``); raises :class:`AnalysisError`.

    ``allow_half``: also accept tasks whose inputs, parameters and output are all float16 (the graph is
    then marked ``half``; its values are still typed f32 -- the code generator computes in float)."""
    key = task.key + (":f16" if allow_half else "")
    if key in _CACHE:
        return _CACHE[key]
    module = _exec_task(task)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise AnalysisError(f"task does not define {name}")
    try:
        with torch.device("meta"):
            init_args = list(module.get_init_inputs())
            model = module.Model(*init_args)
            inputs = list(module.get_inputs())
    except Exception as exc:  # noqa: BLE001
        raise AnalysisError(f"building the model on the meta device failed: {type(exc).__name__}: {exc}") from None
    floats = {x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.dtype.is_floating_point}
    half = allow_half and floats == {torch.float16}
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise AnalysisError(f"get_inputs()[{i}] is a {type(x).__name__}, not a tensor: scalar forward "
                                "arguments are not supported (the kernel would need it as a runtime value)")
        if x.dtype not in (torch.float16 if half else torch.float32, torch.int64):
            raise AnalysisError(f"input {i} has dtype {x.dtype}; only float32 (and int64 indices) are supported"
                                + (" (or float16 throughout)" if allow_half else ""))
    from evokernel.torch_trace import FX_LOCK

    with FX_LOCK:  # fx patches nn.Module.__call__ process-wide while it traces
        try:
            gm = fx.symbolic_trace(model)
        except Exception as exc:  # noqa: BLE001
            raise AnalysisError(f"torch.fx cannot trace Model.forward: {type(exc).__name__}: {exc}") from None
        rec = _Recorder(gm)
        try:
            rec.run(*inputs)
        except Exception as exc:  # noqa: BLE001
            raise AnalysisError(f"shape propagation failed: {type(exc).__name__}: {exc}") from None
    graph = _Normaliser(gm, rec.values, model, half).run()
    out_arg = list(gm.graph.nodes)[-1].args[0] if half else None
    out_val = rec.values.get(out_arg.name) if isinstance(out_arg, fx.Node) else None
    if half and isinstance(out_val, torch.Tensor) and out_val.dtype != torch.float16:
        raise AnalysisError(f"a float16 task whose output is {out_val.dtype}")
    graph.half = half
    graph.init_source, graph.init_params = _init_source(type(model))
    _CACHE[key] = graph
    return graph


# ----------------------------------------------------------------------------------- normalisation

_UNARY_FUNCS = {
    "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "abs": "abs", "neg": "neg", "silu": "silu", "square": "square",
    "reciprocal": "recip", "relu6": "relu6", "mish": "mish", "selu": "selu", "hardswish": "hardswish",
    "hardsigmoid": "hardsigmoid", "softsign": "softsign", "log1p": "log1p", "expm1": "expm1",
    "erf": "erf", "sin": "sin", "cos": "cos", "logsigmoid": "logsigmoid",
}
_MODULE_UNARY = {
    nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu", nn.ReLU6: "relu6",
    nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid", nn.Mish: "mish", nn.SELU: "selu",
    nn.Softsign: "softsign",
}
_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "div": "div", "maximum": "max",
    "minimum": "min", "pow": "pow", "rsub": "rsub", "multiply": "mul", "subtract": "sub", "divide": "div",
}
_DISPATCHED = {id(F.max_pool2d): "max_pool2d", id(F.max_pool1d): "max_pool1d", id(F.max_pool3d): "max_pool3d",
               id(F.adaptive_max_pool2d): "adaptive_max_pool2d", id(F.adaptive_max_pool1d): "adaptive_max_pool1d",
               id(F.adaptive_max_pool3d): "adaptive_max_pool3d"}
_VIEW_METHODS = {"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "float", "clone",
                 "view_as", "reshape_as", "to", "detach"}


class _Normaliser:
    def __init__(self, gm: fx.GraphModule, values: dict[str, Any], model: nn.Module, half: bool = False):
        self.gm = gm
        self.fdtype = torch.float16 if half else torch.float32
        self.values = values
        self.model = model
        self.g = Graph()
        self.env: dict[str, Any] = {}  # fx node name -> node id | Const | python value | ("tuple", ...)
        self.params: dict[str, int] = {}

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
        if obj.dtype != self.fdtype:
            raise AnalysisError(f"parameter {path} has dtype {obj.dtype}; only {self.fdtype} is supported here")
        nid = self.g.add("param", [], {"path": path}, tuple(obj.shape), origin=path)
        self.params[path] = nid
        return nid

    def arg(self, a: Any) -> Any:
        if isinstance(a, fx.Node):
            v = self.env[a.name]
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
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

    def logsumexp(self, x: int, dim: Any, keepdim: bool, n: fx.Node) -> int:
        m = self.reduce("amax", x, dim, True, n)
        e = self.unary("exp", self.binary("sub", x, m, n), n)
        s = self.reduce("sum", e, dim, True, n)
        r = self.binary("add", self.unary("log", s, n), m, n)
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

    def visit_module(self, n: fx.Node, mod: nn.Module, path: str) -> Any:
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
            return self._batch_norm(n, x, w, b, rm, rv, float(mod.eps))
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
        raise self.fail(n, f"module {type(mod).__name__} is not supported")

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

    def _batch_norm(self, n: fx.Node, x: int, w: Any, b: Any, rm: Any, rv: Any, eps: float) -> int:
        """Batch norm over dim 1 (``batch_norm``): statistics of the batch (training mode, or no running
        statistics) or the running ones (eval mode)."""
        shp = self.shape(x)
        if len(shp) < 2:
            raise self.fail(n, "batch norm on a 1-D input")
        if (rm is None) != (rv is None):
            raise self.fail(n, "batch norm with only one running statistic")
        args = [x] + ([w, b] if w is not None else []) + ([rm, rv] if rm is not None else [])
        for a in args[1:]:
            if self.shape(a) != (shp[1],):
                raise self.fail(n, "batch norm parameters that are not per channel")
        return self.g.add("batch_norm", args, {"eps": eps, "affine": w is not None, "batch_stats": rm is None},
                          shp, origin=n.name)

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

    def visit_call(self, n: fx.Node, name: str, args: list[Any], kw: dict[str, Any], val: Any) -> Any:
        g = self.g
        x = args[0] if args else kw.get("input")
        if name in ("getitem",):
            base, idx = args
            if isinstance(base, tuple) and base and base[0] == "minmax":
                if idx == 0:
                    return base[1]
                raise self.fail(n, "argmax/argmin indices are not supported")
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
        if name in ("add", "sub", "subtract") and "alpha" in kw:
            raise self.fail(n, "add/sub with alpha")
        if name in _BINARY:
            a = args[0]
            b = args[1] if len(args) > 1 else kw.get("other", kw.get("exponent"))
            return self.binary(_BINARY[name], _wrap(a), _wrap(b), n)
        if name in ("neg",):
            return self.unary("neg", x, n)
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
        if name == "layer_norm":
            nshape = args[1] if len(args) > 1 else kw["normalized_shape"]
            w = kw.get("weight", args[2] if len(args) > 2 else None)
            b = kw.get("bias", args[3] if len(args) > 3 else None)
            eps = kw.get("eps", args[4] if len(args) > 4 else 1e-5)
            return self.layer_norm(x, nshape, w, b, float(_cv(eps)), n)
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
            lse = self.logsumexp(logits, -1, True, n)
            picked = g.add("gather_last", [logits, target], {}, self.shape(lse), origin=n.name)
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
                raise self.fail(n, "transpose of other than the last two dims")
            return g.add("transpose", [x], {}, tuple(val.shape), origin=n.name)
        if name == "t":
            return g.add("transpose", [x], {}, tuple(val.shape), origin=n.name)
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
            if training or rm is None:
                rm = rv = None
            return self._batch_norm(n, x, w, b, rm, rv, float(_cv(get("eps", 7, 1e-5))))
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
        raise self.fail(n, "no lowering for this operator")


def _cv(v: Any) -> Any:
    return v.value if isinstance(v, Const) else v


def _wrap(v: Any) -> Any:
    if type(v) is Ref or isinstance(v, Const):
        return v
    if isinstance(v, (bool, int, float)):
        return Const(float(v))
    return v


def _fold(fn: str, a: float, b: float) -> float:
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b if b else math.inf,
            "max": max(a, b), "min": min(a, b), "pow": a ** b}[fn]


def _norm_dim(dim: Any, shape: tuple[int, ...], n: fx.Node, norm: _Normaliser) -> int:
    if dim is None:
        raise norm.fail(n, "softmax without an explicit dim")
    return int(_cv(dim)) % len(shape)


_ = operator  # operator.* targets are matched by __name__ (add, mul, truediv, ...)
