"""Output grammars: the candidate file's skeleton as a GBNF grammar that llama.cpp enforces while sampling.

Small local models lose most `generate` failures to the file's shape rather than its content (measured on
Qwen2.5-Coder-1.5B, docs/results.md §5): a block that restates the task's reference ``class Model`` instead
of a ``ModelNew``, a C++ raw string left unterminated, prose or a second block around the code. llama.cpp's
server takes a grammar per request (``"grammar"`` in the body; llama-cpp-python turns it into a
``LlamaGrammar``) and only samples tokens the grammar allows, so the skeleton the system prompt describes
is guaranteed and the model writes only what varies: the summary, the C++ source, the ``ModelNew`` body.

* ``cpu``: ``Summary: ...``, then one python block: the imports, ``CPP_SOURCE = r\"\"\"...\"\"\"`` (C++ in which a
  double quote opens a string literal closed on the same line, so the raw string's end is unambiguous),
  ``lib = load_cpp(CPP_SOURCE[, extra_cflags=[...]])``, ``class ModelNew(nn.Module):`` and its body, the
  closing fence; nothing after it.
* any other backend (Ascend C's six source strings are too free-form to pin down): the summary and exactly
  one python block, nothing after it.

Only OpenAI-compatible llama.cpp servers read the field (``LLMGenerator(grammar=...)`` sends it; the managed
local models of :mod:`evokernel.generators.local.server` turn it on, ``EVOKERNEL_LOCAL_GRAMMAR=0`` turns it off).
"""
from __future__ import annotations

from evokernel.verifier.backends.registry import spec

__all__ = ["CPU_CANDIDATE", "FORBIDDEN_LINE_STARTS", "ONE_PYTHON_BLOCK", "grammar_for", "kernel_grammar"]

# What a line of the C++ may not begin with (after its indentation): the shapes of runaway replies the 1.5B model
# wrote (issue 32): a fence that opens a second block inside the C++, the Python of the candidate (``class
# ModelNew``, imports, ``def``, ``lib = load_cpp``) written into the raw string, which then never closed
# (a backtick is in no character class of the C++ at all: no fence can open anywhere in it)
FORBIDDEN_LINE_STARTS = ("class ", "import ", "from ", "def ", "lib = ", "CPP_SOURCE")


def _gbnf_char(c: str) -> str:
    return {"\\": "\\\\", "]": "\\]", "^": "\\^", "-": "\\-", "\n": "\\n", "\t": "\\t"}.get(c, c)


def _gbnf_lit(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def _guard_rules(prefix: str, words: tuple[str, ...]) -> list[str]:
    """GBNF rules ``<prefix>-start``: the start of a line that does not begin with any of ``words``, then the rest
    of the line (``<prefix>-rest``). Built as a trie: at each depth the next character either leaves every word
    (then anything may follow), continues one (one level down), or ends the line (below the top: the group is
    optional); a character that completes a word
    has no alternative, so the word cannot be written there."""
    rules: list[str] = []
    counter = [0]

    def node(ws: tuple[str, ...], depth: int) -> str:
        name = f"{prefix}-g{counter[0]}"
        counter[0] += 1
        firsts = sorted({w[0] for w in ws})
        # another character: not a newline, not a backtick (no fence can open inside the C++), not indentation at
        # depth 0 (it was consumed), not a quote (a string literal has its own alternative)
        excluded = ["\n", "`", '"'] + firsts + ([" ", "\t"] if depth == 0 else [])
        alts = [f"[^{''.join(_gbnf_char(c) for c in dict.fromkeys(excluded))}] {prefix}-rest",
                f'"\\"" [^"`\\n]* "\\"" {prefix}-rest']
        for c in firsts:
            rest = tuple(w[1:] for w in ws if w[0] == c)
            if any(not r for r in rest):
                continue  # c completes a forbidden word: no way on
            alts.append(f"{_gbnf_lit(c)} {node(rest, depth + 1)}")
        body = " | ".join(alts)
        # below the top the line may also end here (the group is optional)
        rules.append(f"{name} ::= " + (f"({body})?" if depth else body))
        return name

    top = node(words, 0)
    rules.append(f"{prefix}-start ::= {top}")
    rules.append(f'{prefix}-rest ::= ([^"`\\n] | "\\"" [^"`\\n]* "\\"")*')
    return rules


def _cpp_lines(prefix: str, words: tuple[str, ...]) -> str:
    """``<prefix>-lines``: C++ lines, each non-empty and not starting with one of ``words``, with at most one empty
    line between two of them (runs of blank lines were how replies ran to the token cap)."""
    return "\n".join([f'{prefix}-lines ::= ({prefix}-line)*',
                      f'{prefix}-line ::= [ \\t]* {prefix}-start "\\n" ("\\n")?',
                      *_guard_rules(prefix, words)]) + "\n"


_COMMON = r'''
summary ::= "Summary: " [^\n`]+ "\n\n"
py-lines ::= ([ \t]* [^ \t`\n] [^`\n]* "\n" ("\n")?)*
'''

# GBNF (llama.cpp grammars/README.md): literals in double quotes, character classes, * + ?, alternatives |
CPU_CANDIDATE = r'''
root ::= summary "```python\nimport torch\nimport torch.nn as nn\n" extra-imports "\nfrom evokernel.cpu import load_cpp\n\nCPP_SOURCE = r\"\"\"\n" cpp-lines "\"\"\"\n\nlib = load_cpp(CPP_SOURCE" cflags ")\n\n\nclass ModelNew(nn.Module):\n" py-lines "```"
extra-imports ::= ("import math\n")?
cflags ::= (", extra_cflags=[" [^\]\n]* "]")?
''' + _COMMON + _cpp_lines("cpp", FORBIDDEN_LINE_STARTS)

ONE_PYTHON_BLOCK = r'''
root ::= summary "```python\n" py-lines "```"
''' + _COMMON


GRAMMARS: dict[str, str] = {"cpu_candidate": CPU_CANDIDATE, "one_python_block": ONE_PYTHON_BLOCK}


def grammar_for(backend: str) -> str:
    """The GBNF grammar of a full-candidate reply for ``backend`` (its registry row's ``grammar``)."""
    return GRAMMARS[spec(backend).grammar]


def kernel_grammar(signature: str) -> str:
    """The GBNF grammar of a kernel-only reply (:mod:`evokernel.generators.kernel_form`): the summary, a cpp fence,
    helper lines (none may begin ``extern``, so the entry cannot be declared twice or differently), the declared
    ``signature`` itself (written by the grammar, so its parameters are always the declared ones), the body's lines,
    the closing brace and fence; nothing after it."""
    return ("root ::= summary \"```cpp\\n\" helper-lines " + _gbnf_lit(signature + " {\n")
            + ' body-lines "}\\n```"\n'
            + 'summary ::= "Summary: " [^\\n`]+ "\\n\\n"\n'
            + _cpp_lines("helper", FORBIDDEN_LINE_STARTS + ("extern ",))
            + _cpp_lines("body", FORBIDDEN_LINE_STARTS + ("extern ",)))
