"""ModelNew's ``__init__`` rebuilt from the reference model as it was built, when its source cannot be copied.

Whole models (KernelBench level 3) build their layers in loops (``layers.append(nn.Linear(...))``), with helper
methods (``self._make_stage``), module-level helper classes (``BasicBlock``, ``MBConv``) or functions
(``conv_bn``, ``_make_divisible``); a candidate may carry none of these (the verifier's glue rules, see
docs/verifier.md). What the candidate needs is narrower: the same parameters and buffers, drawn from torch's
random stream in the same order, so that the verifier's seeded construction gives both models the same weights.

So the reference ``Model`` is built once on the cpu with every ``nn.Module.__init__`` call recorded (the order in
which modules are created is the order in which their parameters are drawn), and each torch.nn layer that owns a
parameter or a buffer is created in that order from its configuration (constructor arguments read back from the
layer's attributes, ``inspect.signature``). Containers and the task's own classes only route to those layers and
leave nothing behind: a parameter a task class owns directly (``nn.Parameter(torch.randn(...))`` in a helper class)
is not reproduced and the unrolling is refused. Where a model attribute holds only index-addressed layers
(``features.3.1``: nn.Sequential / nn.ModuleList, however nested), the layers are built into local names and
registered under the reference's own paths as nested ``nn.ModuleList`` (``nn.Identity()`` at the indices of layers
without tensors), so that the model's state carries the reference's names (the verifier compares it by name after
each call: a training-mode norm's running statistics); any other layer becomes one flat attribute
(``layer1_0_bn1``). A training-mode norm that tracks running statistics cannot be flat (its state would not pair):
that unrolling is refused with the reason.

The result is checked, not trusted: ModelNew's ``__init__`` is run with the same seed as the reference and every
parameter and buffer must be bit-identical (a post-construction ``nn.init`` loop, a discarded layer that consumed
random numbers, a layer whose configuration cannot be read back: any difference refuses the unrolling with what
differs). The forward of the candidate reads the layers at their new names (``path_map``).
"""
from __future__ import annotations

import inspect
import keyword
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from evokernel.generators.template.front.graph import AnalysisError

_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
_LOCK = threading.Lock()  # nn.Module.__init__ is patched process-wide while the reference is built
_SKIP_ARGS = {"device", "dtype"}


@dataclass
class Unrolled:
    source: str  # ``def __init__(self, ...): ...`` for ModelNew
    path_map: dict[str, str] = field(default_factory=dict)  # reference module path -> ModelNew attribute
    tensor_map: dict[str, str] = field(default_factory=dict)  # reference buffer path -> ModelNew buffer (a mask)
    params: list[str] = field(default_factory=list)  # the constructor's argument names


def _literal(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str, type(None))):
        return not (isinstance(v, float) and v != v)
    if isinstance(v, (tuple, list)):
        return all(_literal(x) for x in v)
    return False


def _is_torch_layer(m: nn.Module) -> bool:
    cls = type(m)
    return getattr(nn, cls.__name__, None) is cls and not isinstance(m, _CONTAINERS)


def layer_call(m: nn.Module) -> str:
    """``nn.Cls(arg=value, ...)`` that builds a layer configured as ``m`` (arguments equal to their default are
    left out); AnalysisError when an argument cannot be read back as a literal."""
    cls = type(m)
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        raise AnalysisError(f"nn.{cls.__name__}'s constructor has no signature to rebuild it from") from None
    kw = []
    for name, p in list(sig.parameters.items())[1:]:
        if name in _SKIP_ARGS:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name == "bias" and isinstance(p.default, bool):
            v: Any = getattr(m, "bias", None) is not None
        elif name in m.__dict__ or (hasattr(m, name) and not isinstance(getattr(m, name), (torch.Tensor, nn.Module))):
            v = getattr(m, name)
        elif p.default is not p.empty:
            continue
        else:
            raise AnalysisError(f"nn.{cls.__name__}: its argument {name!r} cannot be read back from the layer")
        if isinstance(v, (torch.Tensor, nn.Module)):
            raise AnalysisError(f"nn.{cls.__name__}: its argument {name!r} is a {type(v).__name__}")
        if not _literal(v):
            raise AnalysisError(f"nn.{cls.__name__}: its argument {name!r} = {v!r} is not a literal")
        if p.default is not p.empty and _literal(p.default) and v == p.default and type(v) is type(p.default):
            continue
        kw.append(f"{name}={v!r}")
    return f"nn.{cls.__name__}({', '.join(kw)})"


def constant_buffer_expr(b: torch.Tensor) -> str | None:
    """A torch expression without random draws that makes ``b`` (a buffer a task class owns), or None: float32 all
    zeros, all ones, or ones kept on one side of a diagonal of the last two dims (``torch.tril(torch.ones(T, T))``,
    a causal mask) viewed to ``b``'s shape. Only a guess from the values: the rebuild's check compares them."""
    if b.dtype != torch.float32 or b.dim() < 1 or b.numel() == 0:
        return None
    shape = tuple(b.shape)
    if not torch.isfinite(b).all():
        return None
    if bool((b == 0).all()):
        return f"torch.zeros{shape!r}"
    if bool((b == 1).all()):
        return f"torch.ones{shape!r}"
    if b.dim() < 2:
        return None
    r, c = shape[-2:]
    ones = torch.ones(r, c)
    for fn in ("tril", "triu"):
        for d in (0, -1, 1):
            if torch.equal(getattr(torch, fn)(ones, d).expand(shape), b):
                lead = 1
                for s_ in shape[:-2]:
                    lead *= s_
                made = f"torch.{fn}(torch.ones({r}, {c}), {d})" if lead == 1 else \
                    f"torch.{fn}(torch.ones({lead}, {r}, {c}), {d})"
                return f"{made}.view{shape!r}"
    return None


def _attr_name(path: str, taken: set[str]) -> str:
    base = "".join(c if c.isalnum() else "_" for c in path).strip("_") or "layer"
    if base[0].isdigit() or keyword.iskeyword(base) or hasattr(nn.Module, base):
        base = "layer_" + base
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _nested_tops(paths: list[str]) -> list[str]:
    """The reference's top-level attributes whose layers ModelNew registers under the reference's own paths: those
    whose every layer sits at ``top.<index>[.<index>...]`` (nn.Sequential / nn.ModuleList nesting, written as nested
    ``nn.ModuleList``). The model's state is compared by name after each call (a training-mode norm updates its
    running statistics: ``features.3.1.running_mean`` must exist in ModelNew under that name); a task class's named
    children (``layer1.0.bn1``) are not expressible in a candidate's glue and stay flat (``layer1_0_bn1``)."""
    tops: dict[str, bool] = {}
    for path in paths:
        head, *rest = path.split(".")
        ok = bool(rest) and all(p.isdigit() for p in rest) and head.isidentifier() and not keyword.iskeyword(head) \
            and not hasattr(nn.Module, head)
        tops[head] = tops.get(head, True) and ok
    return [t for t, ok in tops.items() if ok]


def _updates_state(m: nn.Module) -> bool:
    """A norm whose forward updates its running statistics in place (training mode, tracking them)."""
    return bool(m.training and getattr(m, "track_running_stats", False) and
                isinstance(getattr(m, "running_mean", None), torch.Tensor))


def _container_expr(prefix: str, local: dict[str, str]) -> str:
    """``nn.ModuleList([...])`` holding, at each index under ``prefix``, the layer built into a local name, a nested
    list, or ``nn.Identity()`` where the reference holds a layer without tensors (an activation, a pooling)."""
    children: dict[int, bool] = {}  # index -> is a leaf
    for path in local:
        if path.startswith(prefix + "."):
            rest = path[len(prefix) + 1:].split(".")
            children[int(rest[0])] = children.get(int(rest[0]), False) or len(rest) == 1
    items = []
    for i in range(max(children) + 1):
        sub = f"{prefix}.{i}"
        if sub in local:
            items.append(local[sub])
        elif i in children:
            items.append(_container_expr(sub, local))
        else:
            items.append("nn.Identity()")
    return f"nn.ModuleList([{', '.join(items)}])"


def _signature_names(model_cls: type) -> list[str]:
    try:
        return list(inspect.signature(model_cls.__init__).parameters)
    except (TypeError, ValueError):
        return []


def _signature(model_cls: type) -> str:
    try:
        sig = inspect.signature(model_cls.__init__)
    except (TypeError, ValueError):
        return "self"
    parts = ["self"]
    for name, p in list(sig.parameters.items())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{name}")
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{name}")
        elif p.default is not p.empty:
            parts.append(f"{name}={p.default!r}" if _literal(p.default) else f"{name}=None")
        else:
            parts.append(name)
    return ", ".join(parts)


@dataclass
class _InitCall:
    """A ``nn.init`` call the task's own code made (not a torch.nn layer's ``reset_parameters``)."""
    fn: str
    tensor: torch.Tensor
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    after: int  # how many modules had been created when it was made


_INIT_FUNCTIONS = [n for n in dir(nn.init) if n.endswith("_") and not n.startswith("_")
                   and callable(getattr(nn.init, n))]


def _build_recorded(build: Any) -> tuple[nn.Module, dict[int, int], list[_InitCall]]:
    """Builds the model with every ``nn.Module.__init__`` recorded (creation order) and every ``nn.init`` call the
    task's code makes outside torch.nn layers' constructors (a weight-initialisation loop after construction)."""
    order: dict[int, int] = {}
    calls: list[_InitCall] = []
    original = nn.Module.__init__
    depth = [0]  # inside an nn.init call

    def recording(self: nn.Module, *args: Any, **kwargs: Any) -> None:
        order.setdefault(id(self), len(order))
        original(self, *args, **kwargs)

    def wrap(name: str, fn: Any) -> Any:
        def recorded(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            # torch's own callers (a layer's reset_parameters) are rebuilt with the layer; the task's code is not
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if depth[0] == 0 and caller != "torch" and not caller.startswith("torch."):
                calls.append(_InitCall(name, tensor, args, dict(kwargs), len(order)))
            depth[0] += 1
            try:
                return fn(tensor, *args, **kwargs)
            finally:
                depth[0] -= 1
        return recorded

    originals = {n: getattr(nn.init, n) for n in _INIT_FUNCTIONS}
    with _LOCK:
        nn.Module.__init__ = recording  # type: ignore[method-assign]
        for n, fn in originals.items():
            setattr(nn.init, n, wrap(n, fn))
        try:
            model = build()
        finally:
            nn.Module.__init__ = original  # type: ignore[method-assign]
            for n, fn in originals.items():
                setattr(nn.init, n, fn)
    return model, order, calls


def unroll_init(model_cls: type, init_args: list[Any], seed: int = 0) -> Unrolled:
    """ModelNew's ``__init__`` for ``model_cls(*init_args)`` as torch.nn layers in creation order, checked
    bit-exact against the reference built with the same seed; AnalysisError (with the reason) otherwise."""
    def build() -> nn.Module:
        torch.manual_seed(seed)
        with torch.device("cpu"):
            return model_cls(*init_args)

    try:
        ref, order, init_calls = _build_recorded(build)
    except AnalysisError:
        raise
    except Exception as exc:  # noqa: BLE001 - the task's own constructor
        raise AnalysisError(f"building the model on the cpu failed: {type(exc).__name__}: {exc}") from None
    layers: list[tuple[int, str, nn.Module]] = []  # (creation index, path, layer)
    seen: dict[int, str] = {}
    aliases: list[tuple[str, int]] = []
    buffers: list[tuple[str, str]] = []  # (path, expression) of buffers task classes own

    def walk(m: nn.Module, path: str) -> None:
        if id(m) in seen:
            aliases.append((path, id(m)))
            return
        if path and _is_torch_layer(m):
            seen[id(m)] = path
            if any(True for _ in m.parameters()) or any(True for _ in m.buffers()):
                layers.append((order.get(id(m), -1), path, m))
            return
        seen[id(m)] = path
        own = [n for n, _ in m.named_parameters(recurse=False)]
        for n, b in m.named_buffers(recurse=False):
            expr = constant_buffer_expr(b)
            if expr is None:
                own.append(n)
            else:
                buffers.append((f"{path}.{n}" if path else n, expr))
        if own:
            where = f"{type(m).__name__} at {path or 'the root'}"
            raise AnalysisError(f"{where} owns the tensor(s) {', '.join(own)} itself (not through a torch.nn layer); "
                                "the flat rebuild reproduces torch.nn layers only")
        for name, child in m._modules.items():
            if child is not None:
                walk(child, f"{path}.{name}" if path else name)

    walk(ref, "")
    if any(k < 0 for k, _, _ in layers):
        raise AnalysisError("a layer was not created while the model was built")
    layers.sort(key=lambda t: t[0])
    nested = _nested_tops([path for _, path, _ in layers])
    for _, path, m in layers:
        if "." in path and path.split(".")[0] not in nested and _updates_state(m):
            raise AnalysisError(f"the training-mode {type(m).__name__} at {path} updates its running statistics, which "
                                "the verifier compares by name after each call; a candidate's glue cannot register a "
                                "layer under that path (a task class's named child), and a flat layer has another name")
    taken: set[str] = set(nested)  # ModelNew's attributes
    taken_local = set(_signature_names(model_cls)) | {"self", "torch", "nn", "math", "lib"}  # __init__'s locals
    path_map: dict[str, str] = {}
    lines = [f"def __init__({_signature(model_cls)}):", "    super().__init__()"]
    owner: dict[int, str] = {}  # id of a layer's tensor -> ModelNew expression
    local: dict[str, str] = {}  # path of a layer of a nested container -> the local name it is built into
    pending = sorted(init_calls, key=lambda c: c.after)
    for k, path, m in layers:
        while pending and pending[0].after <= k:  # the task's nn.init calls made before this layer was created
            lines.append("    " + _init_call_line(pending.pop(0), owner))
        if path.split(".")[0] in nested:  # built here (creation order), registered under its own path below
            name = local[path] = _attr_name(path, taken_local)
            path_map[path] = path
            lines.append(f"    {name} = {layer_call(m)}")
            expr = name
        else:
            name = _attr_name(path, taken)
            path_map[path] = name
            lines.append(f"    self.{name} = {layer_call(m)}")
            expr = f"self.{name}"
        for tn, t in list(m.named_parameters()) + list(m.named_buffers()):
            owner.setdefault(id(t), f"{expr}.{tn}")
    for call in pending:
        lines.append("    " + _init_call_line(call, owner))
    for top in nested:
        lines.append(f"    self.{top} = {_container_expr(top, local)}")
    tensor_map: dict[str, str] = {}
    for path, expr in buffers:  # made without random draws: where they are created does not matter
        name = _attr_name(path, taken)
        tensor_map[path] = name
        lines.append(f"    self.register_buffer({name!r}, {expr})")
    for path, ident in aliases:
        if seen[ident] in path_map:
            path_map[path] = path_map[seen[ident]]
    source = "\n".join(lines)
    _check_same_tensors(source, ref, layers, path_map, build_args=init_args, seed=seed, tensor_map=tensor_map)
    try:
        params = [n for n in list(inspect.signature(model_cls.__init__).parameters)[1:]]
    except (TypeError, ValueError):
        params = []
    return Unrolled(source, path_map, tensor_map=tensor_map, params=params)


def _init_call_line(call: _InitCall, owner: dict[int, str]) -> str:
    """``nn.init.kaiming_normal_(self.features_0.weight, mode='fan_out')``: the call replayed on the rebuilt layer's
    tensor; AnalysisError when it initialises something else or with arguments that are not literals."""
    target = owner.get(id(call.tensor))
    if target is None:
        raise AnalysisError(f"nn.init.{call.fn} initialises a tensor that is not a torch.nn layer's parameter "
                            "or buffer")
    if not all(_literal(a) for a in call.args) or not all(_literal(v) for v in call.kwargs.values()):
        raise AnalysisError(f"nn.init.{call.fn} is called with arguments that are not literals")
    args = [target] + [repr(a) for a in call.args] + [f"{k}={v!r}" for k, v in call.kwargs.items()]
    return f"nn.init.{call.fn}({', '.join(args)})"


def _check_same_tensors(source: str, ref: nn.Module, layers: list[tuple[int, str, nn.Module]], path_map: dict[str, str],
                        build_args: list[Any], seed: int, tensor_map: dict[str, str] | None = None) -> None:
    namespace: dict[str, Any] = {"torch": torch, "nn": nn}
    exec(compile("class ModelNew(nn.Module):\n" + "\n".join("    " + ln for ln in source.splitlines()),
                 "<unrolled init>", "exec"), namespace)
    torch.manual_seed(seed)
    try:
        with torch.device("cpu"):
            new = namespace["ModelNew"](*build_args)
    except Exception as exc:  # noqa: BLE001
        raise AnalysisError(f"the rebuilt __init__ fails: {type(exc).__name__}: {exc}") from None
    want = dict(ref.named_parameters()) | dict(ref.named_buffers())
    covered = set()
    for _, path, m in layers:
        got_layer = new.get_submodule(path_map[path])
        mine = dict(m.named_parameters()) | dict(m.named_buffers())
        theirs = dict(got_layer.named_parameters()) | dict(got_layer.named_buffers())
        if mine.keys() != theirs.keys():
            raise AnalysisError(f"the rebuilt {path} has tensors {sorted(theirs)}, the reference {sorted(mine)}")
        for n, t in mine.items():
            u = theirs[n]
            if t.shape != u.shape or t.dtype != u.dtype or not torch.equal(t, u):
                raise AnalysisError(f"the rebuilt {path}.{n} differs from the reference's (a custom initialisation "
                                    "or another order of random draws)")
            covered.add(f"{path}.{n}")
    for path, name in (tensor_map or {}).items():
        t, u = want[path], getattr(new, name, None)
        if not isinstance(u, torch.Tensor) or t.shape != u.shape or t.dtype != u.dtype or not torch.equal(t, u):
            raise AnalysisError(f"the rebuilt buffer {path} differs from the reference's")
        covered.add(path)
    missing = [k for k in want if k not in covered]
    if missing:
        raise AnalysisError(f"tensors of the reference not rebuilt: {', '.join(missing[:3])}")
