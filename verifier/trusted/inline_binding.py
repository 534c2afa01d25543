"""The trusted side of a ``load_inline`` candidate: its translation unit, and the Python binding the verifier
generates for it.

torch's own ``load_inline`` pastes the candidate's C++ and a pybind11 binding (generated from ``functions``,
docstrings included, unescaped) into one translation unit, so the candidate's code shares a unit with the
Python C API and pybind11. The verifier builds two units instead:

* **the candidate's unit** (``candidate.cpp``): ``#include <torch/extension.h>`` -- which here is the verifier's
  own header, the torch C++ API without Python (``include/torch/extension.h``: torch/all.h) -- then the
  candidate's sources, then a trusted suffix that, for each exported function, instantiates a probe template on
  the function's type (its demangled symbol names that type) and defines a C getter of the function's
  address. Nothing in this unit can name Python or pybind11 (neither header is reachable);
* **the binding unit** (``binding.cpp``): generated here from the exported functions' types, each parsed by a
  positive grammar (tensors, integers, floating numbers, bools, strings, int lists, and vectors, tuples and
  optionals of them) and written out from the parse -- never copied from candidate text. It is compiled
  against the real torch headers, cached by its text (it does not depend on the candidate's code), and linked
  first, so the candidate's object can neither see nor replace the binding's code.

``functions`` may name C++ identifiers only (a list, or a dict whose docstrings are ignored); a hand-written
``PYBIND11_MODULE`` block is read for its ``m.def("name", &function)`` pairs and removed from the sources (the
binding is the verifier's).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from evokernel.cpu import CompileError

MODULE = "evk_ext"  # the module name every generated binding defines (PyInit_evk_ext)
PROBE = "__evk_probe_"
EXPORT = "__evk_export_"
INCLUDE = Path(__file__).resolve().parent / "inline_include"  # the verifier's torch/extension.h (no Python)
_IDENT = re.compile(r"^[A-Za-z_]\w{0,127}$")


@functools.lru_cache(maxsize=None)
def torch_include_dirs() -> list[str]:
    import torch.utils.cpp_extension as ce

    return [str(Path(p).resolve()) for p in ce.include_paths("cpu")]


@functools.lru_cache(maxsize=None)
def python_include_dir() -> str:
    import sysconfig

    return sysconfig.get_path("include", scheme="posix_prefix")


@functools.lru_cache(maxsize=None)
def torch_library_dirs() -> list[str]:
    import torch.utils.cpp_extension as ce

    return list(ce.library_paths())


def candidate_flags() -> list[str]:
    """Compiler flags of the candidate's unit: the verifier's torch/extension.h first, torch's C++ API after."""
    return [f"-isystem{INCLUDE}", *[f"-isystem{d}" for d in torch_include_dirs()], "-fPIC", "-std=c++20",
            "-DTORCH_API_INCLUDE_EXTENSION_H", f"-DTORCH_EXTENSION_NAME={MODULE}"]


def binding_flags() -> list[str]:
    return [*[f"-isystem{d}" for d in torch_include_dirs()], f"-isystem{python_include_dir()}", "-fPIC", "-std=c++20",
            "-DTORCH_API_INCLUDE_EXTENSION_H", f"-DTORCH_EXTENSION_NAME={MODULE}", "-O1"]


# The dispatch-key guards candidate code may construct: torch's own inline header code (torch::empty_like's
# AutoDispatchBelowADInplaceOrView) builds them, so their symbols are on the binary judge's list; what they may
# exclude or include is decided here, when one is built. The link wraps their constructors (complete and base
# object) with the checks GUARD_CHECKS defines in the binding, so a guard over the Python keys -- the operator
# recorder's -- is refused even when it lives inside one native call (red-team rt3_scoped_guard_copy_convert).
GUARD_CONSTRUCTORS = tuple(f"_ZN3c104impl23{kind}DispatchKeyGuard{c}ENS_14DispatchKeySetE"
                           for kind in ("Exclude", "Include") for c in ("C1", "C2"))

GUARD_CHECKS = r"""
// the verifier's checks of the dispatch-key guards candidate code builds (the link wraps their constructors)
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
namespace {
// what torch's own inline code excludes (the autograd keys and ADInplaceOrView): a guard may touch these only
bool evk_guard_keys_allowed(c10::DispatchKeySet keys) {
  return (keys - c10::autograd_dispatch_keyset_with_ADInplaceOrView).empty();
}
}  // namespace
#define EVK_GUARD_WRAP(SYM, KIND)                                                                          \
  extern "C" void __real_##SYM(void* self, c10::DispatchKeySet keys);                                     \
  extern "C" void __wrap_##SYM(void* self, c10::DispatchKeySet keys) {                                    \
    TORCH_CHECK(evk_guard_keys_allowed(keys), "the verifier refuses a " KIND " over ", keys,              \
                ": candidate code may exclude only the autograd keys (what torch's own header code does); "  \
                "the other dispatch keys are the verifier's (its operator recorder)");                      \
    __real_##SYM(self, keys);                                                                              \
  }
"""


def guard_wrappers() -> str:
    lines = [GUARD_CHECKS]
    for sym in GUARD_CONSTRUCTORS:
        kind = "c10::impl::ExcludeDispatchKeyGuard" if "Exclude" in sym else "c10::impl::IncludeDispatchKeyGuard"
        lines.append(f'EVK_GUARD_WRAP({sym}, "{kind}")')
    return "\n".join(lines) + "\n"


def link_flags() -> list[str]:
    return ["-shared", *[f"-Wl,--wrap={sym}" for sym in GUARD_CONSTRUCTORS],
            *[f"-L{d}" for d in torch_library_dirs()], "-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python"]


# --- the exported functions --------------------------------------------------------------------------------

def exported_functions(functions: object) -> list[tuple[str, str]]:
    """(Python name, C++ function) pairs from load_inline's ``functions`` (a list of identifiers, or a dict whose
    keys are identifiers: docstrings are ignored)."""
    if functions is None:
        return []
    names = list(functions) if isinstance(functions, (list, tuple, dict)) else [functions]
    for n in names:
        if not isinstance(n, str) or not _IDENT.match(n):
            raise CompileError(f"load_inline: functions must name C++ functions (identifiers), got {str(n)[:80]!r}")
    return [(n, n) for n in names]


_MODULE_BLOCK = re.compile(r"PYBIND11_MODULE\s*\(\s*\w+\s*,\s*(\w+)\s*\)\s*\{")


def split_module_blocks(source: str) -> tuple[str, list[tuple[str, str]]]:
    """A hand-written ``PYBIND11_MODULE(name, m) { m.def("py", &cpp, ...); }``: the source without the block (its
    lines kept blank, so line numbers stay), and the (py, cpp) pairs it defines."""
    from evokernel.cpu import strip_comments

    pairs: list[tuple[str, str]] = []
    code = strip_comments(source)
    out = source
    for m in reversed(list(_MODULE_BLOCK.finditer(code))):
        depth, end = 0, len(code)
        for k in range(m.end() - 1, len(code)):
            depth += code[k] == "{"
            depth -= code[k] == "}"
            if depth == 0:
                end = k + 1
                break
        var = re.escape(m.group(1))
        pairs[:0] = [(d.group(1), d.group(2)) for d in re.finditer(
            var + r'\s*\.\s*def\s*\(\s*"(\w+)"\s*,\s*(?:torch::wrap_pybind_function\s*\()?\s*&?\s*(?:::)?(\w+)',
            code[m.end():end])]
        block = out[m.start():end]
        out = out[:m.start()] + "\n" * block.count("\n") + out[end:]
    return out, pairs


def candidate_unit(sources: list[str], exports: list[tuple[str, str]]) -> tuple[str, tuple[int, int]]:
    """The candidate's translation unit and the range of its source lines (the suffix is the verifier's)."""
    body = "\n".join(sources)
    text = "#include <torch/extension.h>\n" + body + "\n"
    first, end = 2, 2 + body.count("\n") + 1
    suffix = ["", "// --- evokernel: the exported functions' types and addresses (verifier-generated) ---"]
    cpp_names = list(dict.fromkeys(c for _, c in exports))
    for k, cpp in enumerate(cpp_names):
        suffix += [f"template <typename F> void {PROBE}{k}() {{}}",
                   f"template void {PROBE}{k}<decltype(&{cpp})>();",
                   f'extern "C" void* {EXPORT}{k}() {{ return reinterpret_cast<void*>(&{cpp}); }}']
    return text + "\n".join(suffix) + "\n", (first, end)


# --- the types of the exported functions: a positive grammar --------------------------------------------------

_TYPE_TOKEN = re.compile(r"\s*(::|[A-Za-z_]\w*|[<>(),*&]|\d+)")
_SCALARS = frozenset({"long", "long long", "int", "unsigned int", "unsigned long", "short", "double", "float", "bool"})


class _Types:
    """Recursive-descent parser of a demangled function-pointer type ``R (*)(A, B, ...)``."""

    def __init__(self, text: str):
        self.toks, pos = [], 0
        while pos < len(text):
            m = _TYPE_TOKEN.match(text, pos)
            if m is None:
                if text[pos:].strip() == "":
                    break
                raise ValueError(f"unexpected {text[pos:pos + 20]!r}")
            self.toks.append(m.group(1))
            pos = m.end()
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if want is not None and tok != want:
            raise ValueError(f"expected {want!r}, got {tok!r}")
        self.i += 1
        return tok

    def qualified(self) -> str:
        name = self.take()
        while self.peek() == "::":
            self.take()
            name += "::" + self.take()
        return name

    def base(self, allow_void: bool) -> str:
        """A value type, written out as the binding will spell it."""
        tok = self.peek()
        if tok in ("long", "unsigned", "int", "short", "double", "float", "bool"):
            words = [self.take()]
            while self.peek() in ("long", "int"):
                words.append(self.take())
            spelled = " ".join(words)
            if spelled not in _SCALARS:
                raise ValueError(f"unsupported number type {spelled!r}")
            return spelled
        if tok == "void":
            if not allow_void:
                raise ValueError("void is a return type only")
            self.take()
            return "void"
        name = self.qualified()
        if name == "at::Tensor":
            return "at::Tensor"
        if name == "c10::ArrayRef":
            self.take("<")
            self.take("long")
            self.take(">")
            return "c10::IntArrayRef"
        if name == "std::__cxx11::basic_string":
            start = self.i
            depth = 0
            while True:
                t = self.take()
                depth += t == "<"
                depth -= t == ">"
                if depth == 0:
                    break
            if " ".join(self.toks[start:self.i]) != "< char , std :: char_traits < char > , std :: allocator < char > >":
                raise ValueError("only std::string strings")
            return "std::string"
        if name in ("std::vector", "std::optional", "std::tuple"):
            self.take("<")
            args = [self.arg()]
            while self.peek() == ",":
                self.take()
                if name == "std::vector" and self.peek() == "std":
                    self.qualified()  # the allocator
                    self.take("<")
                    self.arg()
                    self.take(">")
                    continue
                args.append(self.arg())
            self.take(">")
            if name != "std::tuple" and len(args) != 1:
                raise ValueError(f"{name} of {len(args)} types")
            return f"{name}<{', '.join(args)}>"
        raise ValueError(f"the type {name} cannot cross into Python (use tensors, numbers, bools, strings, int "
                         "lists, and vectors/tuples/optionals of them)")

    def arg(self) -> str:
        """A parameter or template argument: a value type, optionally ``const`` and/or a reference."""
        spelled = self.base(allow_void=False)
        const = False
        if self.peek() == "const":
            self.take()
            const = True
        ref = ""
        while self.peek() == "&":
            ref += self.take()
        if ref == "&" and not const and spelled != "at::Tensor":
            raise ValueError("non-const references to values cannot be bound")
        return f"{spelled}{' const' if const else ''}{ref}"

    def function_pointer(self) -> str:
        ret = self.base(allow_void=True)
        if self.peek() == "const":
            self.take()
        self.take("(")
        self.take("*")
        self.take(")")
        self.take("(")
        params: list[str] = []
        if self.peek() != ")":
            params.append(self.arg())
            while self.peek() == ",":
                self.take()
                params.append(self.arg())
        self.take(")")
        if self.peek():
            raise ValueError(f"unexpected {self.peek()!r} after the parameters")
        return f"{ret} (*)({', '.join(params)})"


def parse_function_type(text: str) -> str:
    """The binding's spelling of a demangled function-pointer type, or ValueError saying what cannot be bound."""
    return _Types(text).function_pointer()


def probe_types(defined: list[tuple[str, str, str]], count: int) -> list[str]:
    """The exported functions' types from the probes' demangled names (``void __evk_probe_0<T>()``)."""
    found: dict[int, str] = {}
    pat = re.compile(r"^void " + PROBE + r"(\d+)<(.*)>\(\)$")
    for _name, dem, _kind in defined:
        m = pat.match(dem)
        if m:
            found[int(m.group(1))] = m.group(2)
    missing = [k for k in range(count) if k not in found]
    if missing:
        raise CompileError("load_inline: the types of the exported functions could not be read from the build")
    return [found[k] for k in range(count)]


@dataclass
class Binding:
    exports: list[tuple[str, str]]  # (Python name, C++ function)
    types: list[str]  # the binding's spelling of each distinct C++ function's pointer type

    def source(self) -> str:
        cpp_names = list(dict.fromkeys(c for _, c in self.exports))
        lines = ["// generated by the evokernel verifier from the exported functions' types",
                 "#include <torch/extension.h>", ""]
        lines += [f'extern "C" void* {EXPORT}{k}();' for k in range(len(cpp_names))]
        lines += ["", f"PYBIND11_MODULE({MODULE}, m) {{"]
        for py, cpp in self.exports:
            k = cpp_names.index(cpp)
            lines.append(f'  m.def("{py}", torch::wrap_pybind_function(reinterpret_cast<{self.types[k]}>({EXPORT}{k}())),'
                         f' "{py}");')
        return "\n".join(lines + ["}", guard_wrappers()])


def make_binding(exports: list[tuple[str, str]], probed: list[str]) -> Binding:
    cpp_names = list(dict.fromkeys(c for _, c in exports))
    types = []
    for cpp, text in zip(cpp_names, probed):
        try:
            types.append(parse_function_type(text))
        except ValueError as exc:
            raise CompileError(f"load_inline: {cpp} has the type {text}, which cannot be bound to Python: {exc}") from None
    return Binding(exports, types)
