"""Pull the kernel out of a kernel-only reply (:mod:`evokernel.generators.kernel_form`) and check it against the
declared entry.

The reply should be a ``Summary:`` line and one ```` ```cpp ```` block defining the declared function (and any
helpers it needs). Accepted as well, since models stray: an untagged or ``c``/``c++`` block, an unterminated last
block (cut off), a python block holding a whole candidate (its ``load_cpp`` source is used), bare C++ without a
fence (from its first ``#include``/``extern``/``static``/... line to its last closing brace), the entry defined
without ``extern "C"`` (it is added). Refused, with a message that says what to write instead: no C++ at all, no
definition of the entry, a definition whose parameters differ from the declaration (count, pointer or not, pointee
type), braces that do not balance (a reply cut off by the token limit), a second definition of the entry.
"""
from __future__ import annotations

import re

from evokernel.cpu import parse_extern_c, strip_comments
from evokernel.generators.base import GenerationError
from evokernel.generators.extract import CPP_TAGS, find_blocks, strip_reasoning
from evokernel.generators.kernel_form import KernelSpec, kernel_of_candidate

__all__ = ["extract_kernel"]

_CPP_START = re.compile(r"^[ \t]*(#include|#pragma|#define|extern\b|static\b|inline\b|template\b|void\b|namespace\b|"
                        r"struct\b|typedef\b|using\b|constexpr\b|const\b|float\b|double\b|int\b|int64_t\b)")


def _error(message: str, reply: str, spec: KernelSpec) -> GenerationError:
    return GenerationError(f"{message}; reply with one ```cpp block defining\n{spec.signature} {{ ... }}", reply=reply)


def _definitions(code: str, entry: str) -> list[re.Match[str]]:
    """Definitions (not declarations) of ``entry`` in ``code`` (comments and strings stripped)."""
    return list(re.finditer(rf"\b{re.escape(entry)}\s*\([^;{{}}]*\)\s*\{{", code))


def _candidates(text: str, entry: str) -> list[str]:
    """C++ pieces of the reply that mention the entry, the likeliest first."""
    blocks = find_blocks(text)
    found: list[tuple[int, int, str]] = []
    for b in blocks:
        code = b.text
        if b.is_python or "load_cpp" in code:
            inner = kernel_of_candidate(code)
            if inner is None:
                continue
            code = inner
            rank = 0
        else:
            rank = 2 if b.lang in CPP_TAGS else 1
        if re.search(rf"\b{re.escape(entry)}\s*\(", code):
            found.append((rank, b.start_line, code))
    if found:
        return [c for _, _, c in sorted(found, key=lambda f: (-f[0], -f[1]))]
    if blocks:
        return []
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if _CPP_START.match(ln)), None)
    if start is None:
        return []
    end = max((i for i, ln in enumerate(lines) if ln.rstrip().endswith("}")), default=len(lines) - 1)
    return ["\n".join(lines[start:end + 1]) + "\n"]


def extract_kernel(reply: str, spec: KernelSpec) -> str:
    """The model's C++ (the entry and its helpers), ready for :meth:`KernelSpec.candidate`; a
    :class:`GenerationError` naming what is wrong otherwise."""
    text, unterminated = strip_reasoning(reply)
    if not text.strip():
        why = ("the reply ended inside an unterminated <think> section (out of output tokens while reasoning?)"
               if unterminated else "the reply is empty")
        raise _error(f"no kernel: {why}", reply, spec)
    pieces = _candidates(text, spec.entry)
    if not pieces:
        raise _error(f"no kernel: the reply has no C++ that defines `{spec.entry}`", reply, spec)
    code = pieces[0].strip("\n") + "\n"
    bare = strip_comments(code)
    bare = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', bare)
    defs = _definitions(bare, spec.entry)
    if not defs:
        raise _error(f"the C++ declares but never defines `{spec.entry}` (no body in braces)", reply, spec)
    if len(defs) > 1:
        raise _error(f"`{spec.entry}` is defined {len(defs)} times; define it once", reply, spec)
    opened, closed = bare.count("{"), bare.count("}")
    if opened != closed:
        raise _error(f"the braces of the C++ do not balance ({opened} '{{' against {closed} '}}'): the reply may "
                     "have been cut off by the output token limit", reply, spec)
    try:
        sigs = {s.name: s for s in parse_extern_c(code)}
        if spec.entry not in sigs:  # defined without C linkage: give it C linkage where its definition starts
            m = re.search(rf"^[ \t]*(?=[^\n;{{}}]*\b{re.escape(spec.entry)}\s*\([^;{{}}]*\)\s*\{{)", code, re.MULTILINE)
            if m is not None:
                code = code[:m.end()] + 'extern "C" ' + code[m.end():]
                sigs = {s.name: s for s in parse_extern_c(code)}
    except TypeError as exc:
        raise _error(f"the kernel's parameters cannot be bound: {exc}", reply, spec) from None
    sig = sigs.get(spec.entry)
    if sig is None:
        raise _error(f'`{spec.entry}` is not an extern "C" function of the C++', reply, spec)
    if sig.restype != "void":
        raise _error(f"`{spec.entry}` returns {sig.restype}; it must return void (outputs go to the output pointers)",
                     reply, spec)
    want = [(a.pointer, a.ctype) for a in spec.args]
    got = [(p.pointer, p.ctype) for p in sig.params]
    if want != got:
        have = ", ".join(p.describe() for p in sig.params)
        raise _error(f"`{spec.entry}` takes ({have}); the declared entry takes "
                     f"({', '.join(a.c_decl() for a in spec.args)}): keep the declared parameters, in order", reply, spec)
    return code
