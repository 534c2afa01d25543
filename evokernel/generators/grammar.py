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

__all__ = ["CPU_CANDIDATE", "ONE_PYTHON_BLOCK", "grammar_for"]

_COMMON = r'''
summary ::= "Summary: " [^\n`]+ "\n\n"
block-body ::= ([^`] | "`" [^`])* "\n"
'''

# GBNF (llama.cpp grammars/README.md): literals in double quotes, character classes, * + ?, alternatives |
CPU_CANDIDATE = r'''
root ::= summary "```python\nimport torch\nimport torch.nn as nn\n" extra-imports "\nfrom evokernel.cpu import load_cpp\n\nCPP_SOURCE = r\"\"\"\n" cpp "\"\"\"\n\nlib = load_cpp(CPP_SOURCE" cflags ")\n\n\nclass ModelNew(nn.Module):\n" block-body "```"
extra-imports ::= ("import math\n")?
cpp ::= ([^"] | "\"" [^"\n]* "\"")*
cflags ::= (", extra_cflags=[" [^\]\n]* "]")?
''' + _COMMON

ONE_PYTHON_BLOCK = r'''
root ::= summary "```python\n" block-body "```"
''' + _COMMON


GRAMMARS: dict[str, str] = {"cpu_candidate": CPU_CANDIDATE, "one_python_block": ONE_PYTHON_BLOCK}


def grammar_for(backend: str) -> str:
    """The GBNF grammar of a candidate reply for ``backend`` (its registry row's ``grammar``)."""
    return GRAMMARS[spec(backend).grammar]
