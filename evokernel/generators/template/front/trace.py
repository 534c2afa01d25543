"""Task analysis: run the task source, build ``Model`` and its inputs on the meta device, trace ``forward`` with
torch.fx, record every node's value, and normalise the graph (:mod:`.normalise`) into the IR of :mod:`.graph`.

Composite operators (softmax, log_softmax, logsumexp, layer_norm, norms, losses, linear) are decomposed by the
normaliser, so the stage builder only sees primitives. Anything else raises :class:`AnalysisError` naming the FX
node. The reference ``__init__`` is rewritten for the candidate's ``ModelNew`` here (:func:`_init_source`).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import textwrap
import types
from typing import Any

import torch
from torch import fx, nn

from evokernel.generators.template.front.graph import AnalysisError, Graph
from evokernel.generators.template.front.init_unroll import unroll_init
from evokernel.generators.template.front.normalise import Normaliser
from evokernel.runtime.torch_trace import FX_LOCK

_CACHE: dict[str, Graph] = {}


def clear_cache() -> None:
    _CACHE.clear()


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
        # from the default generator, without touching torch compute names in the candidate (inside lambdas and
        # comprehensions too: an in-place rewrite, unlike the tril hoisting below)
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
    fn.body = _native_trimasks(fn.body)
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


# ``torch.tril/triu(t)`` in ``__init__`` (a causal mask buffer, minGPT): compute that the verifier's construction guard
# refuses in a candidate's PyTorch (docs/verifier.md: only affine maps of drawn values), so the candidate computes it
# natively, in place in a copy of ``t`` (``cpu/candidate.py`` adds the function when the constructor calls it)
INIT_TRIMASK = "ek_init_trimask"


def _int_expr(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    return f"int({ast.unparse(node)})"


def _native_trimasks(body: list[ast.stmt]) -> list[ast.stmt]:
    """Each ``torch.tril(t[, diagonal])`` / ``torch.triu(...)`` in a statement of ``body`` becomes a local copy of ``t``
    that the native library masks in place, before the statement: ``_mask0 = (t).contiguous().clone()``,
    ``lib.ek_init_trimask(_mask0, rows, cols, numel, diagonal, upper)``."""
    out: list[ast.stmt] = []
    count = [0]

    class Hoist(ast.NodeTransformer):
        def __init__(self) -> None:
            self.before: list[ast.stmt] = []

        def _scoped(self, node: ast.AST) -> ast.AST:
            return node  # a lambda or comprehension binds its own names: a copy before the statement cannot see them

        visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scoped

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            f = node.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch"
                    and f.attr in ("tril", "triu") and 1 <= len(node.args) <= 2):
                return node
            kws = {k.arg: k.value for k in node.keywords}
            if set(kws) - {"diagonal"} or (len(node.args) == 2 and kws):
                return node
            diag = node.args[1] if len(node.args) == 2 else kws.get("diagonal", ast.Constant(0))
            name = f"_mask{count[0]}"
            count[0] += 1
            self.before += ast.parse(
                f"{name} = ({ast.unparse(node.args[0])}).contiguous().clone()\n"
                f"lib.{INIT_TRIMASK}({name}, {name}.shape[-2], {name}.shape[-1], {name}.numel(), "
                f"{_int_expr(diag)}, {int(f.attr == 'triu')})").body
            return ast.Name(name, ast.Load())

    for st in body:
        if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
            out.append(st)  # a loop or branch: its statements run another number of times than one copy before it
            continue
        h = Hoist()
        st = h.visit(st)
        out += h.before + [st]
    return out


_CANDIDATE_GLOBALS = {"torch", "nn", "super", "self", "lib"}


def _plain(init_source: str) -> bool:
    """An ``__init__`` a candidate can copy as it is: a docstring, ``super().__init__()`` and assignments whose
    values build layers, parameters and values from the arguments (``self.fc = nn.Linear(a, b)``); no loops, no
    lists of layers, no reads of ``self`` (helper methods, class attributes)."""
    fn = ast.parse(init_source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    for st in fn.body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and "super()" in ast.unparse(st.value):
            continue
        if not isinstance(st, (ast.Assign, ast.AnnAssign)) or st.value is None:
            return False
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        if not all(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                   for t in targets):
            return False
        if any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(st.value)) or \
                any(isinstance(n, (ast.List, ast.ListComp, ast.Lambda)) for n in ast.walk(st.value)):
            return False
    return True


# the flat rebuild builds the reference and the rebuilt model on the cpu to compare them: not for models bigger than
# a verifier worker holds anyway (fit their sizes first)
UNROLL_MAX_BYTES = 512 << 20


def _tensor_bytes(model: nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])


def _candidate_init(module: types.ModuleType, model_cls: type, graph: Graph,
                    nbytes: int = 0) -> tuple[str, list[str]]:
    """ModelNew's ``__init__``: the reference's own source when it is plain (:func:`_plain`), else the model as
    built, unrolled into flat torch.nn layers (:mod:`.init_unroll`; the graph's parameter paths are renamed to
    match). When neither works, the reason of the source copy is raised (or its source is returned)."""
    try:
        copied: tuple[str, list[str]] | None = _init_source(model_cls)
        copy_error: AnalysisError | None = None
    except AnalysisError as exc:
        copied, copy_error = None, exc
    if copied is not None and (not copied[0] or _plain(copied[0])):
        return copied
    try:
        if nbytes > UNROLL_MAX_BYTES:
            raise AnalysisError(f"its parameters take {nbytes >> 20} MiB, more than the {UNROLL_MAX_BYTES >> 20} MiB "
                                "the rebuild's check builds on the cpu (fit the task's sizes)")
        init_args = list(module.get_init_inputs())
        unrolled = unroll_init(model_cls, init_args)
    except AnalysisError as exc:
        if copied is not None:
            return copied  # the verifier judges the copy as it is
        raise AnalysisError(f"{copy_error}; rebuilding it layer by layer failed too: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the task's get_init_inputs
        if copied is not None:
            return copied
        raise AnalysisError(f"{copy_error}; get_init_inputs() failed: {type(exc).__name__}: {exc}") from None
    prefixes = sorted(unrolled.path_map, key=len, reverse=True)
    for n in graph.nodes:
        if n.op != "param":
            continue
        path = n.attrs["path"]
        if path in unrolled.tensor_map:
            n.attrs["path"] = unrolled.tensor_map[path]
            continue
        head = next((p for p in prefixes if path.startswith(p + ".")), None)
        if head is None:
            if copied is not None:
                return copied
            raise AnalysisError(f"{copy_error}; the parameter {path} is not in a rebuilt layer")
        n.attrs["path"] = unrolled.path_map[head] + path[len(head):]
    fn = ast.parse(unrolled.source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = _native_trimasks(fn.body)
    return ast.unparse(fn), unrolled.params


def _inline_globals(fn: Any, model_cls: type) -> Any:
    """The candidate is a module of its own: a module-level constant of the task that ``__init__``
    reads (a default argument, a size, a tuple) is inlined as its literal value; any other module-level
    name (a helper function, a class) cannot follow the code and is refused with its name."""
    bound = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
    bound |= {t.id for t in ast.walk(fn) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    glb = getattr(model_cls.__init__, "__globals__", {})

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if not isinstance(node.ctx, ast.Load) or node.id in bound or node.id in _CANDIDATE_GLOBALS:
                return node
            if node.id in glb:
                value = glb[node.id]
                if value is torch or value is nn or value is math:  # math: the candidate imports it when it is used
                    name = "torch" if value is torch else "nn" if value is nn else "math"
                    return ast.copy_location(ast.Name(name, ast.Load()), node)
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


def _defaults_not_given(model: nn.Module, given: int) -> dict[str, Any]:
    """The forward parameters after the ``given`` inputs that have defaults (``h0=None``): traced as those
    constants, so ``if h0 is None:`` takes the branch the reference takes when called with ``get_inputs()``."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for p in params[given:]:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty:
            out[p.name] = p.default
    return out


class _ValueTracer(fx.Tracer):
    """A tracer that also computes every node's value as it records it (on the meta device), so that a condition on
    what is not data -- sizes, devices, dtypes (NetVLAD's ``if x.device != self.clusters.device: raise``) -- takes
    the branch the reference takes for these inputs. A condition on a tensor's values (data-dependent control flow)
    is still refused: a meta tensor has no values, and a specialised branch would be wrong for other inputs."""

    _UNKNOWN = object()

    def __init__(self, inputs: list[Any], defaults: dict[str, Any] | None):
        super().__init__()
        self.proxy_buffer_attributes = True
        self._inputs = list(inputs) + list((defaults or {}).values())
        self._placeholders = 0
        self.values: dict[fx.Node, Any] = {}
        self._computing = 0  # > 0 while a value is computed: modules run as they are, attributes read as they are

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        return attr_val if self._computing else super().getattr(attr, attr_val, parameter_proxy_cache)

    def call_module(self, m: nn.Module, forward: Any, args: Any, kwargs: Any) -> Any:
        return forward(*args, **kwargs) if self._computing else super().call_module(m, forward, args, kwargs)

    def create_proxy(self, kind: str, target: Any, args: Any, kwargs: Any, *rest: Any, **kw: Any) -> Any:
        """Sizes (``x.size()``, ``x.shape``, ``x.dim()``) are given to the forward as the numbers they are, so a
        Python loop over one (``for t in range(seq_len)``, level3 34) unrolls: the kernel is generated for these
        shapes anyway (its forward checks them)."""
        proxy = super().create_proxy(kind, target, args, kwargs, *rest, **kw)
        sized = (kind == "call_method" and target in ("size", "dim")) or \
            (kind == "call_function" and target is builtins.getattr and len(args) > 1 and args[1] == "shape")
        v = self.values.get(proxy.node, self._UNKNOWN) if isinstance(proxy, fx.Proxy) else self._UNKNOWN
        if sized and isinstance(v, (int, torch.Size)) and not isinstance(v, bool):
            return v
        return proxy

    def create_node(self, kind: str, target: Any, args: Any, kwargs: Any, name: str | None = None,
                    type_expr: Any = None) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self._computing += 1
        try:
            self.values[node] = self._value(node)
        except Exception:  # noqa: BLE001 - only a condition on it needs it
            self.values[node] = self._UNKNOWN
        finally:
            self._computing -= 1
        return node

    def _value(self, node: fx.Node) -> Any:
        if node.op == "placeholder":
            i, self._placeholders = self._placeholders, self._placeholders + 1
            return self._inputs[i] if i < len(self._inputs) else self._UNKNOWN
        if node.op == "output":
            return None
        get = lambda a: fx.node.map_arg(a, lambda n: self.values[n])  # noqa: E731
        args, kwargs = get(node.args), get(node.kwargs)
        if node.op == "get_attr":  # read past the tracer's patched module __getattr__ (it would make proxies)
            obj: Any = self.root
            for part in str(node.target).split("."):
                d = vars(obj)
                for table in ("_modules", "_parameters", "_buffers"):
                    if part in d.get(table, {}):
                        obj = d[table][part]
                        break
                else:
                    obj = d[part]
            return obj
        if node.op == "call_module":
            return self.root.get_submodule(str(node.target))(*args, **kwargs)
        if node.op == "call_method":
            return getattr(args[0], str(node.target))(*args[1:], **kwargs)
        return node.target(*args, **kwargs)  # type: ignore[operator]

    def to_bool(self, obj: fx.Proxy) -> bool:
        v = self.values.get(obj.node, self._UNKNOWN)
        if v is self._UNKNOWN or isinstance(v, torch.Tensor):
            return super().to_bool(obj)  # data-dependent control flow: refused
        return bool(v)


def _trace(model: nn.Module, concrete_args: dict[str, Any] | None, inputs: list[Any] | None = None) -> fx.GraphModule:
    """``fx.symbolic_trace``; when it fails, once more with the module's buffers traced as graph values, and then
    with :class:`_ValueTracer` (conditions on sizes and devices decided for these inputs).

    fx hands a buffer to ``forward`` as the tensor itself, so Python operations on it run at trace time: slicing a
    causal mask with a traced size (``self.bias[:, :, :T, :T]``, minGPT) then fails. Traced as ``get_attr`` proxies,
    the slice is a graph node whose bounds are the sizes the recorder computes. Only a failed trace is retried, so
    every model fx traced before gets the same graph."""
    try:
        return fx.symbolic_trace(model, concrete_args=concrete_args)
    except Exception as first:  # noqa: BLE001
        tracers: list[fx.Tracer] = []
        if any(True for _ in model.buffers()):
            tracers.append(fx.Tracer())
            tracers[-1].proxy_buffer_attributes = True
        if inputs is not None:
            tracers.append(_ValueTracer(inputs, concrete_args))
        for tracer in tracers:
            try:
                graph = tracer.trace(model, concrete_args)
            except Exception:  # noqa: BLE001 - the first reason is the one to report
                continue
            return fx.GraphModule(tracer.root, graph, type(model).__name__)
        raise first from None


def analyze(task: Any, allow_half: bool = False, eval_mode: bool = False) -> Graph:
    """Analyse ``task`` (cached by ``task.key``); raises :class:`AnalysisError`.

    ``allow_half``: also accept tasks whose inputs, parameters and output are all float16 (the graph is
    then marked ``half``; its values are still typed f32 -- the code generator computes in float).
    ``eval_mode``: trace the model after ``model.eval()`` (a norm reads its running statistics, a dropout is the
    identity): the forward a user's inference runs, which the verifier tries in one trial."""
    key = task.key + (":f16" if allow_half else "") + (":eval" if eval_mode else "")
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
            if eval_mode:
                model.eval()
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
    with FX_LOCK:  # fx patches nn.Module.__call__ process-wide while it traces
        # a forward that keeps state on the module (``self.hidden = tanh(...)``) assigns tracer proxies to it: the
        # plain tensor attributes are put back after tracing (the graph reads them through get_attr)
        state = [(m, k, v) for m in model.modules() for k, v in vars(m).items() if isinstance(v, torch.Tensor)]
        try:
            gm = _trace(model, _defaults_not_given(model, len(inputs)) or None, inputs)
        except Exception as exc:  # noqa: BLE001
            raise AnalysisError(f"torch.fx cannot trace Model.forward: {type(exc).__name__}: {exc}") from None
        finally:
            for m, k, v in state:
                setattr(m, k, v)
        for name in {n.target for n in gm.graph.nodes if n.op == "get_attr"}:
            obj, path = gm, str(name).split(".")
            for part in path[:-1]:
                obj = getattr(obj, part, None)
            if isinstance(getattr(obj, path[-1], None), fx.Proxy):
                src: Any = model
                for part in path:
                    src = getattr(src, part)
                setattr(obj, path[-1], src)
        rec = _Recorder(gm)
        try:
            rec.run(*inputs)
        except Exception as exc:  # noqa: BLE001
            raise AnalysisError(f"shape propagation failed: {type(exc).__name__}: {exc}") from None
    holders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    graph = Normaliser(gm, rec.values, model, half, constant_args=set(holders[len(inputs):])).run()
    out_arg = list(gm.graph.nodes)[-1].args[0] if half else None
    out_val = rec.values.get(out_arg.name) if isinstance(out_arg, fx.Node) else None
    if half and isinstance(out_val, torch.Tensor) and out_val.dtype != torch.float16:
        raise AnalysisError(f"a float16 task whose output is {out_val.dtype}")
    graph.half = half
    graph.init_source, graph.init_params = _candidate_init(module, type(model), graph, _tensor_bytes(model))
    _CACHE[key] = graph
    return graph
