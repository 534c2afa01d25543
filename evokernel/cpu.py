"""`load_cpp`: the one door from a CPU candidate's Python to its native code.

    from evokernel.cpu import load_cpp
    lib = load_cpp(CPP_SOURCE)
    lib.relu(x, out, x.numel())

The source is compiled as a shared library (``g++ -O3 -march=native -fopenmp``), cached by a
hash of its content, and every ``extern "C"`` function it defines becomes a callable whose
argument types come from its C declaration:

* pointer parameters take CPU tensors whose dtype matches the pointee
  (``float*`` <-> float32, ``double*`` <-> float64, ``int32_t*`` <-> int32, ``int64_t*`` <-> int64,
  ``uint8_t*`` <-> uint8, ``bool*`` <-> bool, ...; ``void*`` takes any dtype). The native code sees a
  contiguous buffer in the tensor's logical (row-major) order: a contiguous tensor is passed as it is (no
  copy); a non-contiguous one (a transpose, a slice, a row of a wider buffer) is copied into a contiguous
  buffer before the call and, unless the pointee is declared ``const``, the buffer is copied back into the
  tensor after it, so an in-place kernel writes through into a view. The same tensor passed twice gets one
  buffer; two different views that share memory get one buffer each;
* integer parameters take Python ints, ``float``/``double`` parameters take Python numbers.

A mismatch raises ``TypeError`` naming the function, the parameter and what was expected.

Outside the verifier the library is built in this process (cache: ``$EVOKERNEL_CACHE`` or
``~/.cache/evokernel``). Inside the verifier's sandbox the build is done by the trusted parent,
which checks the source against the native-code rules, compiles it in a throw-away sandbox and
hands back a read-only library; the candidate never runs the compiler itself.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any, Callable

import torch

__all__ = ["load_cpp", "NativeLibrary", "NativeFunction", "CompileError", "parse_extern_c"]


class CompileError(RuntimeError):
    """The native source did not build. ``diagnostics`` holds ``file:line: error: ...`` lines."""

    def __init__(self, diagnostics: str):
        super().__init__(diagnostics)
        self.diagnostics = diagnostics


# Set by the sandboxed worker: a callable(source, extra_cflags) -> path of a built library.
# When unset, load_cpp builds locally.
_BUILDER: Callable[[str, tuple[str, ...]], str] | None = None
# Number of native calls made so far; the worker reads it around forward() to detect decoy kernels.
_native_calls = 0
# Set while the sandboxed worker constructs ModelNew (verifier/sandboxed/init_guard.py): told every native call's
# arguments, whose plain numbers are values Python chose.
_CALL_WATCH: Callable[[tuple[Any, ...]], None] | None = None


def note_native_call(args: tuple[Any, ...]) -> None:
    """Every door to native code (load_cpp here, load_inline and ascend-sim's binding in the worker) reports its
    calls: counted (decoy-kernel detection) and, during construction, shown to the construction guard."""
    global _native_calls
    _native_calls += 1
    if _CALL_WATCH is not None:
        _CALL_WATCH(args)


_POINTEE_DTYPES: dict[str, torch.dtype | None] = {
    "float": torch.float32,
    "double": torch.float64,
    "int": torch.int32,
    "int32_t": torch.int32,
    "unsigned": torch.int32,
    "unsigned int": torch.int32,
    "uint32_t": torch.int32,
    "int64_t": torch.int64,
    "long": torch.int64,
    "long int": torch.int64,
    "long long": torch.int64,
    "long long int": torch.int64,
    "uint64_t": torch.int64,
    "size_t": torch.int64,
    "ssize_t": torch.int64,
    "int16_t": torch.int16,
    "short": torch.int16,
    "int8_t": torch.int8,
    "signed char": torch.int8,
    "uint8_t": torch.uint8,
    "unsigned char": torch.uint8,
    "char": torch.uint8,
    "bool": torch.bool,
    "void": None,  # any dtype
}

_SCALAR_CTYPES: dict[str, Any] = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "int": ctypes.c_int,
    "int32_t": ctypes.c_int32,
    "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "long": ctypes.c_long,
    "long int": ctypes.c_long,
    "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong,
    "long long int": ctypes.c_longlong,
    "size_t": ctypes.c_size_t,
    "ssize_t": ctypes.c_ssize_t,
    "int16_t": ctypes.c_int16,
    "short": ctypes.c_short,
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "char": ctypes.c_char,
    "bool": ctypes.c_bool,
}
_FLOAT_SCALARS = {"float", "double"}

_QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__", "struct", "register"}


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # base type without qualifiers, e.g. "float", "int64_t"
    pointer: bool
    readonly: bool = False  # a pointer to const (``const float* x``, ``float const* x``): the kernel only reads it

    def describe(self) -> str:
        return f"{'const ' if self.readonly else ''}{self.ctype}{'*' if self.pointer else ''} {self.name}".strip()


@dataclass(frozen=True)
class Signature:
    name: str
    restype: str
    params: tuple[Param, ...]


from evokernel.source_text import lex_source, strip_comments  # noqa: E402,F401 - re-exported


_SIG_RE = re.compile(
    r"(?P<ret>[A-Za-z_][\w\s\*]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*(?P<end>\{|;)"
)


def _match_brace(text: str, open_pos: int) -> int:
    depth = 0
    for k in range(open_pos, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text)


def _base_type(tokens: list[str]) -> str:
    kept = [t for t in tokens if t not in _QUALIFIERS and not t.startswith("__attribute__")]
    return " ".join(kept)


def _parse_param(text: str, index: int, func: str) -> Param | None:
    text = text.strip()
    if not text or text == "void":
        return None
    pointer = "*" in text or "[" in text
    # const before the first '*' (or '[') qualifies the pointee; `float* const x` is a const pointer to writable data
    readonly = pointer and "const" in re.split(r"[\*\[]", text, maxsplit=1)[0].replace("&", " ").split()
    cleaned = re.sub(r"\[[^\]]*\]", " ", text).replace("*", " ").replace("&", " ")
    tokens = cleaned.split()
    words = [t for t in tokens if t not in _QUALIFIERS]
    # the last word is the parameter name unless the declaration is unnamed (e.g. "float*")
    name = f"arg{index}"
    if len(words) >= 2 and _base_type(words[:-1]) in _POINTEE_DTYPES | _SCALAR_CTYPES:
        name = words[-1]
        words = words[:-1]
    base = _base_type(words)
    if pointer and base not in _POINTEE_DTYPES:
        raise TypeError(f'extern "C" function {func}: unsupported pointer parameter type {text!r}')
    if not pointer and base not in _SCALAR_CTYPES:
        raise TypeError(f'extern "C" function {func}: unsupported parameter type {text!r}')
    return Param(name=name, ctype=base, pointer=pointer, readonly=bool(readonly))


def _parse_sig(match: re.Match[str]) -> Signature | None:
    ret_tokens = match.group("ret").replace("*", " * ").split()
    ret_tokens = [t for t in ret_tokens if t not in {"static", "inline", "extern", "__global__"}]
    name = match.group("name")
    if name in {"if", "for", "while", "switch", "return", "sizeof"} or not ret_tokens:
        return None
    restype = _base_type(ret_tokens)
    if "*" in restype:
        restype = "void*"
    parts = [p for p in match.group("params").split(",")]
    params = tuple(p for i, raw in enumerate(parts) if (p := _parse_param(raw, i, name)) is not None)
    return Signature(name=name, restype=restype, params=params)


def parse_extern_c(source: str) -> list[Signature]:
    """Find every function declared or defined with C linkage in a C++ source."""
    text = strip_comments(source)
    sigs: dict[str, Signature] = {}
    for m in re.finditer(r'extern\s+"C"\s*', text):
        start = m.end()
        if start < len(text) and text[start] == "{":
            end = _match_brace(text, start)
            block, pos = text[start + 1 : end], 0
            while True:
                sm = _SIG_RE.search(block, pos)
                if not sm:
                    break
                sig = _parse_sig(sm)
                if sig is not None:
                    sigs[sig.name] = sig
                pos = _match_brace(block, sm.end() - 1) + 1 if sm.group("end") == "{" else sm.end()
        else:
            sm = _SIG_RE.match(text, start)
            if sm and (sig := _parse_sig(sm)) is not None:
                sigs[sig.name] = sig
    return list(sigs.values())


def _may_overlap(t: torch.Tensor) -> bool:
    """Might two elements of ``t`` share memory? False when, taking the dimensions of more than one element by
    increasing stride, each stride passes the span of the ones before it (transposes, slices, padded rows pass);
    True for a broadcast (a stride of 0) and for views this simple test cannot clear."""
    span = 0
    for size, stride in sorted(((s, st) for s, st in zip(t.shape, t.stride()) if s > 1), key=lambda d: d[1]):
        if stride <= span:
            return True
        span += (size - 1) * stride
    return False


class NativeFunction:
    """A typed callable over one ``extern "C"`` symbol."""

    def __init__(self, sig: Signature, symbol: Any):
        self.signature = sig
        self.__name__ = sig.name
        self._symbol = symbol
        argtypes = []
        for p in sig.params:
            argtypes.append(ctypes.c_void_p if p.pointer else _SCALAR_CTYPES[p.ctype])
        symbol.argtypes = argtypes
        if sig.restype == "void":
            symbol.restype = None
        elif sig.restype in _SCALAR_CTYPES:
            symbol.restype = _SCALAR_CTYPES[sig.restype]
        else:
            symbol.restype = ctypes.c_void_p
        self._checks = [self._make_check(i, p) for i, p in enumerate(sig.params)]

    def _make_check(self, i: int, p: Param) -> Callable[[Any], Any]:
        where = f"{self.signature.name}(): argument {i + 1} '{p.name}' ({p.describe()})"
        if p.pointer:
            want = _POINTEE_DTYPES[p.ctype]

            def check_tensor(v: Any) -> Any:
                if not isinstance(v, torch.Tensor):
                    raise TypeError(f"{where} expects a CPU tensor, got {type(v).__name__}")
                if v.device.type != "cpu":
                    raise TypeError(f"{where} expects a CPU tensor, got one on {v.device}")
                if want is not None and v.dtype != want:
                    raise TypeError(f"{where} expects dtype {want}, got {v.dtype}")
                if v.is_contiguous():
                    return v.data_ptr()
                if not p.readonly and _may_overlap(v):
                    raise TypeError(f"{where} got a view whose elements share memory (a broadcast or expand) for a "
                                    "pointer the kernel may write; declare it const if it only reads it, or pass a "
                                    "tensor of its own")
                return v  # a view: copied into a contiguous buffer for the call (`__call__`)

            return check_tensor
        if p.ctype in _FLOAT_SCALARS:

            def check_float(v: Any) -> Any:
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise TypeError(f"{where} expects a Python float, got {type(v).__name__}")
                return float(v)

            return check_float

        def check_int(v: Any) -> Any:
            if p.ctype == "bool" and isinstance(v, bool):
                return v
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{where} expects a Python int, got {type(v).__name__}")
            return v

        return check_int

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self._checks):
            want = ", ".join(p.describe() for p in self.signature.params)
            raise TypeError(
                f"{self.signature.name}() takes {len(self._checks)} arguments ({want}), got {len(args)}"
            )
        converted = [check(a) for check, a in zip(self._checks, args)]
        # non-contiguous tensors: a contiguous copy each (one per distinct view), written back after the call where the
        # kernel may write it (a pointer to non-const). Contiguous tensors are passed as they are, with no copy.
        buffers: dict[tuple[Any, ...], list[Any]] = {}
        for k, value in enumerate(converted):
            if isinstance(value, torch.Tensor):
                key = (value.data_ptr(), tuple(value.shape), tuple(value.stride()), value.dtype)
                held = buffers.get(key)
                if held is None:
                    held = buffers[key] = [value, value.contiguous(), False]
                held[2] = held[2] or not self.signature.params[k].readonly
                converted[k] = held[1].data_ptr()
        note_native_call(args)
        result = self._symbol(*converted)
        for view, buffer, written in buffers.values():
            if written:
                with torch.no_grad():
                    view.copy_(buffer)
        return result

    def __repr__(self) -> str:
        params = ", ".join(p.describe() for p in self.signature.params)
        return f"<native {self.signature.restype} {self.signature.name}({params})>"


class NativeLibrary:
    """The ``extern "C"`` functions of one compiled source, as attributes."""

    def __init__(self, path: str, sigs: list[Signature]):
        self.path = path
        self._dll = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self.functions: dict[str, NativeFunction] = {}
        for sig in sigs:
            try:
                symbol = getattr(self._dll, sig.name)
            except AttributeError:
                continue  # declared but not defined in this source
            self.functions[sig.name] = NativeFunction(sig, symbol)
        if not self.functions:
            raise CompileError('load_cpp: the source defines no extern "C" function to call')

    def __getattr__(self, name: str) -> NativeFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(
            f"native library has no extern \"C\" function {name!r}; it has: {', '.join(functions) or 'none'}"
        )

    def __getitem__(self, name: str) -> NativeFunction:
        return self.__getattr__(name)

    def __dir__(self) -> list[str]:
        return sorted(self.functions)

    def __repr__(self) -> str:
        return f"<NativeLibrary {', '.join(self.functions)}>"


def load_cpp(source: str, extra_cflags: tuple[str, ...] | list[str] = ()) -> NativeLibrary:
    """Compile ``source`` (cached by content) and return its ``extern "C"`` functions."""
    if not isinstance(source, str):
        raise TypeError("load_cpp(source): source must be a str of C++ code")
    flags = tuple(str(f) for f in extra_cflags)
    sigs = parse_extern_c(source)
    if not sigs:
        raise CompileError(
            'load_cpp: no extern "C" function found; declare the entry points as extern "C" '
            "so they can be called from Python"
        )
    if _BUILDER is not None:
        path = _BUILDER(source, flags)
    else:
        # lazy: outside a verifier only (in the sandbox the worker installs its builder first)
        from evokernel.verifier.trusted.native_build import build_cpp_local

        path = build_cpp_local(source, flags)
    return NativeLibrary(path, sigs)
