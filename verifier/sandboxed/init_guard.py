"""Runs INSIDE the sandbox (candidate workers): what PyTorch may compute while ``ModelNew`` is constructed.

``__init__`` is untimed and sees no inputs, but it may prepare tensors with PyTorch. Left free, it tabulates the
task's whole function -- every float16 bit pattern from ``arange(65536).view(float16)``, or a float32 grid -- and
the native "kernel" only looks values up. `InitGuard` is a dispatch mode active during construction that gives
every tensor storage a *provenance* and allows compute on one provenance only:

* **drawn**: random draws (``randn``, ``normal_``, ``uniform_`` ... and every ``nn.init`` function except
  ``eye_``/``dirac_``), constant fills of a whole storage (``zeros``, ``ones``, ``full``, ``fill_``, ``zero_``,
  a one-element ``torch.tensor(3.0)``; ``empty``, which the guard zeroes: the allocator would hand back freed
  memory as it was, a freed table included), and what the allowed compute makes of drawn tensors;
* **grid**: deterministic structure (``arange``, ``linspace``, ``logspace``, ``eye``, ``randperm``);
* **computed**: the result of refused compute (already a violation);
* **python**: values that came from Python (``torch.tensor(list)`` of more than one element, a single value
  written into part of a storage, ``t[i] = v``) and storages the mode never saw being made.

The allowed compute (`AFFINE`) is affine arithmetic with Python-number factors on floating tensors and casts
between floating dtypes -- what honest constructors do (``1.0 + 0.5 * torch.empty(n).normal_()``,
``torch.randn(k) * 0.02``, ``.half()``) -- and only on drawn tensors: what it makes of drawn values is an affine
image of random numbers, no function of the task. Everything else that computes (``exp``, ``reciprocal``, ``matmul``, ``sort``, a ``mul`` of two
tensors ...) is a violation, and so is any compute whose input is grid or python: weight preparation
beyond an affine map belongs in native code, which ``__init__`` may call. Views, copies, ``cat``/``stack`` and the
like move values without computing: the result carries the provenance of what it moved.

The values Python chose during construction and the tensors the model holds that the guard never saw made are
capped at `PYTHON_CAP` in total (`audit`), so a table Python computed (a list comprehension over ``math.exp``) is
refused; a table that small is no more than the constants a kernel may carry in its own source. A chosen value counts
where it is made, whatever is later copied where: a list's elements, a constant other than 0 and 1 (``full(s, v)``,
``fill_(v)``, ``torch.tensor(v)``, a draw's bounds, an affine map's factors), and every placement of values into a
chosen part of a storage (an element write, a slice copied, a part concatenated, a view held: the position is a
number) except the first placement of a constant just counted (``t[i] = v`` is one value). Native calls made during
construction report their arguments (``evokernel.cpu.note_native_call``): each call, and every plain number, string
character and list element it is given, integers included (a table passes as fixed-point integers as well as
floats), and every view into part of a storage (its offset is a number) count too.

Nothing here is trusted by the parent beyond being a tripwire: it runs in the candidate's process.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.nn import init as nn_init
from torch.nn.modules import batchnorm as nn_batchnorm
from torch.utils._python_dispatch import TorchDispatchMode

import evokernel.cpu as native
from evokernel.verifier.sandboxed import init_perturbation
from evokernel.verifier.sandboxed.data_movement import BLANK_FACTORIES, CONSTANT_FACTORIES, FILLS, whole

DRAWN, GRID, PYTHON, COMPUTED = "drawn", "grid", "python", "computed"
_RANK = {DRAWN: 0, GRID: 1, COMPUTED: 2, PYTHON: 3}  # the provenance of a mix: the worst of its parts

PYTHON_CAP = 256  # values Python chose that a constructed model may hold (small constants)

# nn.init's functions as torch defines them, taken when the worker imports this module (before candidate code)
_NN_INIT = {n: f for n, f in vars(nn_init).items() if n[:1].islower() and callable(f)
            and getattr(f, "__module__", "") == nn_init.__name__}
nn_norm_base = nn_batchnorm._NormBase

RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal",
                              "bernoulli", "poisson", "multinomial"})
RANDOM_INPLACE = frozenset({"normal_", "uniform_", "bernoulli_", "exponential_", "geometric_", "log_normal_",
                            "cauchy_", "random_"})
GRID_FACTORIES = frozenset({"arange", "linspace", "logspace", "eye", "randperm", "range", "tril_indices",
                            "triu_indices"})
# moving values without computing: views, copies, concatenation, padding with a constant, reordering
MOVES = frozenset({
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "flatten", "unflatten", "select", "slice", "narrow", "split", "split_with_sizes", "chunk", "unbind", "detach",
    "alias", "lift_fresh_copy", "clone", "contiguous", "view_as", "expand_as", "movedim", "swapaxes", "swapdims",
    "_reshape_alias", "cat", "stack", "repeat", "tile", "flip", "roll", "constant_pad_nd", "index_select",
    "t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "diagonal", "unfold", "_to_copy", "copy_",
})
# no values at all (sizes, strides, metadata)
METADATA = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size", "stride",
                      "dim", "numel", "is_same_size", "_has_compatible_shallow_copy_type", "resize_", "set_",
                      "_local_scalar_dense", "requires_grad_", "is_nonzero", "equal"})
# the compute __init__ may run on drawn tensors: affine maps with scalar factors (casts are _to_copy/copy_)
AFFINE = frozenset({"add", "add_", "sub", "sub_", "rsub", "neg", "neg_", "mul", "mul_", "div", "div_"})
_SCALED = frozenset({"mul", "mul_", "div", "div_"})  # one tensor operand (the first), the factor a Python number


def _affine(name: str, args: Any, ins: list[torch.Tensor], out: Any) -> bool:
    """``name(*args)`` is an affine map with scalar coefficients, on floating tensors only: a product or quotient
    of two tensors (x * x, 2 / x, x[j] * x[j]) is a polynomial or a reciprocal, integer arithmetic on a dtype view
    of floats is bit manipulation (an exp approximation), so neither is."""
    if not all(t.is_floating_point() for t in ins + list(_tensors(out))):
        return False
    if name in _SCALED:
        return len(ins) == 1 and len(args) >= 1 and args[0] is ins[0]
    return True


def _chosen_numbers(args: Any) -> int:
    """The plain numbers among an operator's arguments (a fill value, a factor, a draw's bounds) other than 0 and 1,
    which every factory has without being told (``zeros``, ``ones``): values the constructor chose. Sizes come as
    lists and are not among them."""
    return sum(1 for a in args if isinstance(a, (int, float)) and not isinstance(a, bool) and a not in (0, 1))


def _call_values(value: Any) -> int:
    """What a native call's argument carries that Python chose: a plain number is one value, a string one per
    character, a list or tuple its elements; a tensor is the guard's business (its values have a provenance)
    unless it is a view into part of a storage, whose offset is a number the caller chose."""
    if isinstance(value, torch.Tensor):
        return 0 if _whole(value) else 1
    if isinstance(value, (bool, int, float, complex)):
        return 1
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, dict):
        return sum(_call_values(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(_call_values(v) for v in value)
    return 1


def _float_cast(src: torch.Tensor, dtype: torch.dtype) -> bool:
    return src.is_floating_point() and dtype.is_floating_point

_GRID_INITS = frozenset({"eye_", "dirac_", "eye", "dirac"})  # nn.init functions that write structure


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _ref(t: torch.Tensor) -> StorageWeakRef | None:
    try:
        return StorageWeakRef(t.untyped_storage())
    except (RuntimeError, NotImplementedError):  # no storage (sparse, ...): unknown provenance
        return None


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    ra, rb = _ref(a), _ref(b)
    return ra is not None and rb is not None and ra.cdata == rb.cdata


def _zero_bytes(t: torch.Tensor, start: int) -> None:
    """Zero ``t``'s storage from byte ``start`` on."""
    try:
        storage = t.untyped_storage()
        if storage.nbytes() > start:
            torch.empty(0, dtype=torch.uint8).set_(storage)[start:].zero_()
    except (RuntimeError, NotImplementedError):
        pass


def _capacity(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().nbytes() // max(1, t.element_size())
    except (RuntimeError, NotImplementedError):
        return t.numel()


def _single(t: torch.Tensor) -> bool:
    """``t``'s storage holds one value (a scalar, or a scalar expanded)."""
    try:
        return t.untyped_storage().nbytes() <= t.element_size()
    except (RuntimeError, NotImplementedError):
        return False


def _whole(t: torch.Tensor) -> bool:
    """``t`` covers every byte of its storage (writing it replaces the storage's whole content): a whole
    tensor in data_movement's sense, except an empty view of a storage that has bytes (it replaces none)."""
    return whole(t) and (t.numel() > 0 or t.untyped_storage().nbytes() == 0)


def _worst(labels: Any) -> str:
    return max(labels, key=_RANK.__getitem__, default=DRAWN)


class InitGuard(TorchDispatchMode):
    """Provenance of every storage made while active, and the compute that broke the rule (`violations`:
    operator name -> count, with what it was applied to)."""

    def __init__(self) -> None:
        super().__init__()
        self._labels: dict[int, tuple[StorageWeakRef, str]] = {}  # storage -> (its weak reference, provenance)
        # values Python chose, over the whole construction (held or not: a temporary table copied by a native
        # call into a drawn buffer was made all the same)
        self.python_values = 0
        # storages holding one chosen constant already counted where it was made (full(.., v), fill_(v),
        # torch.tensor(v)): the first time it is placed into part of another storage is paid for
        self._prepaid: dict[int, StorageWeakRef] = {}
        self.violations: dict[str, int] = {}
        self.trusted = 0  # > 0 inside an nn.init function (its ops fill the tensor it is given, nothing else)

    # --- provenance ----------------------------------------------------------------------------------------------
    def seen(self, t: torch.Tensor) -> bool:
        ref = _ref(t)
        held = None if ref is None else self._labels.get(ref.cdata)
        return held is not None and not held[0].expired()

    def label(self, t: torch.Tensor) -> str:
        ref = _ref(t)
        held = None if ref is None else self._labels.get(ref.cdata)
        if held is None or held[0].expired():
            return PYTHON  # made before the construction, or by a path the mode never saw
        return held[1]

    def set_label(self, t: torch.Tensor, label: str) -> None:
        ref = _ref(t)
        if ref is not None:
            self._labels[ref.cdata] = (ref, label)

    def write(self, target: torch.Tensor, label: str) -> None:
        """``label``'s values written into ``target`` (its whole storage, or a part of it)."""
        self.set_label(target, label if _whole(target) else _worst([label, self.label(target)]))

    def fill_part(self, target: torch.Tensor) -> None:
        """A value the constructor chose (a fill, a draw from U(v, v), a scaling by a Python number) written into
        ``target``: over a whole storage it is a constant, over a part it is an element write -- one value of
        Python's data (a padding row zeroed is one value; a table written entry by entry is as many as entries)."""
        if not _whole(target):
            self.set_label(target, PYTHON)
            self.python_values += 1

    def chosen(self, target: torch.Tensor, n: int = 1) -> None:
        """``n`` values the constructor chose made into ``target`` (a fill value, a draw's bounds, a factor), counted
        where they are made, whatever is later copied where."""
        if n:
            self.python_values += n
            ref = _ref(target)
            if ref is not None:
                self._prepaid[ref.cdata] = ref

    def placed(self, source: torch.Tensor) -> None:
        """Values of ``source`` written into a chosen part of a storage (an element, a row, a slice): one choice, the
        position, counted -- unless ``source`` is a constant just made and counted there (``t[i] = v``: one value)."""
        ref = _ref(source)
        if ref is not None and ref.cdata in self._prepaid and not self._prepaid[ref.cdata].expired():
            del self._prepaid[ref.cdata]
            return
        self.python_values += 1

    def native_call(self, args: tuple[Any, ...]) -> None:
        """A native call during construction (``evokernel.cpu.note_native_call``): the call itself (how many calls
        is a number too) and every plain number, string and list element it is given count as values Python chose,
        integers included (a table passes as fixed-point integers as well as floats)."""
        self.python_values += 1 + sum(_call_values(a) for a in args)

    def _violate(self, name: str, inputs: list[str]) -> None:
        key = name if all(i == DRAWN for i in inputs) else f"{name} on {_worst(inputs)} values"
        self.violations[key] = self.violations.get(key, 0) + 1

    # --- the dispatch ----------------------------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        grown = args[0] if name == "resize_" and args and isinstance(args[0], torch.Tensor) else None
        before = _capacity(grown) * grown.element_size() if grown is not None else 0
        out = func(*args, **kwargs)
        ins = list(_tensors(list(args) + list(kwargs.values())))
        if self.trusted:  # inside nn.init: what it makes is drawn; the tensor it fills is labelled when it returns
            for t in _tensors(out):
                if not any(_same_storage(t, i) for i in ins):
                    self.set_label(t, DRAWN)
            return out
        if grown is not None:
            _zero_bytes(grown, before)  # resize_ that grew the storage: its new bytes, as empty's
        elif name in METADATA:
            pass
        elif name in RANDOM_INPLACE or name in FILLS:
            # a whole storage drawn or filled is drawn (or a constant); a part written is an element write
            # (narrow(0, i, 1).uniform_(v, v) puts a chosen value there as surely as fill_(v))
            if _whole(ins[0]):
                self.set_label(ins[0], DRAWN)
                self.chosen(ins[0], min(1, _chosen_numbers([*args[1:], *kwargs.values()])))  # fill_(v), uniform_(v, v): v was chosen
            else:
                self.fill_part(ins[0])
        elif name in CONSTANT_FACTORIES or name in RANDOM_FACTORIES:
            # *_like and new_* read their argument's shape only; normal(mean, std), bernoulli(p) ... read values
            reads = [] if name.endswith("_like") or name.startswith("new_") else ins
            self._check_compute(name, reads, allowed=True)
            self._label_outputs(out, _worst([self.label(t) for t in reads]))
            for t in _tensors(out):  # full(size, v), normal(m, s, size): the constant (or the bounds) was chosen
                self.chosen(t, min(1, _chosen_numbers([*args, *kwargs.values()])))
        elif name in BLANK_FACTORIES:
            # the allocator hands back freed memory as it was (a freed Python-made table, a freed grid): zeroed here
            # (ops inside this handler do not come back to the mode), an empty tensor is the constant 0
            for t in _tensors(out):
                _zero_bytes(t, 0)
            self._label_outputs(out, DRAWN)

        elif name in GRID_FACTORIES:
            self._label_outputs(out, GRID)
        elif name == "lift_fresh":  # torch.tensor(data): one value is a constant, more are Python's data
            if out.numel() <= 1:
                self._label_outputs(out, DRAWN)
                self.chosen(out, min(1, _chosen_numbers([out.item()] if out.numel() else [])))
            else:
                self.set_label(out, PYTHON)
                self.python_values += out.numel()
        elif name in MOVES:
            self._move(name, args, ins, out)
        elif name in AFFINE:
            ok = _affine(name, args, ins, out)
            self._check_compute(name, ins, allowed=ok)
            clean = ok and all(self.label(t) == DRAWN for t in ins)
            if clean and name.endswith("_") and ins and out is ins[0] and not _whole(ins[0]):
                self.fill_part(ins[0])  # t.narrow(0, i, 1).add_(v): a chosen value into one element
            else:
                self._label_outputs(out, DRAWN if clean else COMPUTED)
                for t in _tensors(out):  # zeros(1) + v is as much a chosen constant as full((1,), v)
                    self.chosen(t, _chosen_numbers([*args, *kwargs.values()]))  # alpha= too
        else:
            self._check_compute(name, ins, allowed=False)
            self._label_outputs(out, COMPUTED)  # refused already; what it made is not counted again
        return out

    def _label_outputs(self, out: Any, label: str) -> None:
        for t in _tensors(out):
            self.set_label(t, label)

    def _check_compute(self, name: str, ins: list[torch.Tensor], allowed: bool) -> None:
        labels = [self.label(t) for t in ins]
        if not allowed or any(lb != DRAWN for lb in labels):
            self._violate(name, labels)

    def _move(self, name: str, args: Any, ins: list[torch.Tensor], out: Any) -> None:
        if name == "copy_":
            dst, src = args[0], args[1]
            if isinstance(src, torch.Tensor):
                if dst.dtype != src.dtype:  # a converting copy is a cast: compute
                    self._check_compute("copy_ (dtype cast)", [src], allowed=_float_cast(src, dst.dtype))
                if _whole(dst):
                    self.write(dst, self.label(src))
                else:  # values written into a chosen part of a storage: t[i] = v, a row, a slice of a constant
                    self.placed(src)
                    self.set_label(dst, PYTHON if _single(src) else _worst([self.label(src), self.label(dst)]))
            return
        if name == "_to_copy":
            src = ins[0]
            if src.dtype != out.dtype:
                self._check_compute("_to_copy (dtype cast)", [src], allowed=_float_cast(src, out.dtype))
            self.set_label(out, self.label(src))
            return
        # views share the storage (and its label); copies and concatenations carry the worst of their sources, and
        # a concatenation of single values (each a value the constructor chose) is Python's data
        label = _worst([self.label(t) for t in ins])
        if name in ("cat", "stack"):
            # single values, and parts of storages (r[j] of a random pool, picked), are values placed by choice
            placed = [t for t in ins if (_single(t) or not _whole(t)) and self.label(t) != PYTHON]
            for t in placed:
                self.placed(t)
            if any(_single(t) for t in placed):
                label = PYTHON
        for t in _tensors(out):
            if not any(_same_storage(t, i) for i in ins):
                self.set_label(t, label)

    # --- nn.init: its functions overwrite the tensor they are given ------------------------------------------------
    @contextlib.contextmanager
    def trusted_inits(self) -> Iterator[None]:
        """nn.init's functions, and the verifier's drawn constant initialisers in their place (init_perturbation),
        run trusted: known by identity (torch's as they were when this module was imported, before any candidate
        code), so a function the candidate put there runs guarded like any of its code."""
        drawn = init_perturbation.active_initialisers()
        names = [n for n in dir(nn_init) if n[:1].islower() and (getattr(nn_init, n) is _NN_INIT.get(n)
                                                                  or getattr(nn_init, n) in drawn)]
        held = {n: getattr(nn_init, n) for n in names}
        guard = self

        def wrap(fname: str, fn: Any) -> Any:
            def run(*a: Any, **k: Any) -> Any:
                guard.trusted += 1
                try:
                    result = fn(*a, **k)
                finally:
                    guard.trusted -= 1
                target = a[0] if a else k.get("tensor")
                if isinstance(target, torch.Tensor):
                    if _whole(target):
                        guard.set_label(target, GRID if fname in _GRID_INITS else DRAWN)
                    else:  # constant_(t.narrow(0, i, 1), v): an element write
                        guard.fill_part(target)
                return result
            run.__name__, run.__doc__, run.__wrapped__ = fn.__name__, fn.__doc__, fn  # type: ignore[attr-defined]
            return run

        for n, fn in held.items():
            setattr(nn_init, n, wrap(n, fn))
        stats = nn_norm_base.reset_running_stats
        if stats in drawn:  # the drawn running statistics fill the norm's own buffers (mean, variance)

            def reset(norm: Any) -> None:
                guard.trusted += 1
                try:
                    stats(norm)
                finally:
                    guard.trusted -= 1
                for buf in (getattr(norm, "running_mean", None), getattr(norm, "running_var", None)):
                    if isinstance(buf, torch.Tensor):
                        guard.set_label(buf, DRAWN if _whole(buf) else PYTHON)

            nn_norm_base.reset_running_stats = reset
        try:
            yield
        finally:
            for n, fn in held.items():
                setattr(nn_init, n, fn)
            nn_norm_base.reset_running_stats = stats

    # --- what survives construction -------------------------------------------------------------------------------
    def audit(self, model: Any) -> None:
        """The values Python chose during the construction, plus the elements of every storage ``model`` holds
        (parameters, buffers, tensor attributes of it and its submodules, lists of them) that the guard never saw
        made; more than `PYTHON_CAP` is a violation."""
        counted: set[int] = set()
        total = self.python_values
        for t in _held_tensors(model):
            ref = _ref(t)
            if ref is None or ref.cdata not in counted:
                if ref is not None:
                    counted.add(ref.cdata)
                if not self.seen(t):
                    total += _capacity(t)
            if self.seen(t) and not _whole(t):
                total += 1  # a held view into part of a storage (r[j] of a random pool): its position was chosen
        if total > PYTHON_CAP:
            self.violations[f"{total} values made by Python (at most {PYTHON_CAP})"] = 1


def _held_tensors(model: Any) -> Iterator[torch.Tensor]:
    modules = list(model.modules()) if isinstance(model, torch.nn.Module) else [model]
    stack: list[Any] = []
    for m in modules:
        stack.extend(vars(m).values())
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend(v)
        elif isinstance(v, dict):  # _parameters, _buffers and plain dicts
            stack.extend(v.values())


@contextlib.contextmanager
def guarded_construction() -> Iterator[InitGuard]:
    """The guard for one construction: active with nn.init's functions trusted; ``audit`` the model after."""
    guard = InitGuard()
    held, native._CALL_WATCH = native._CALL_WATCH, guard.native_call
    try:
        with guard.trusted_inits(), guard:
            yield guard
    finally:
        native._CALL_WATCH = held
