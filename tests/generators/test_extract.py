"""Pulling the candidate file out of model replies: fences, reasoning, stitching, errors."""
import ast

import pytest

from evokernel.generators.base import GenerationError
from evokernel.generators.extract import (
    extract_candidate,
    extract_summary,
    find_blocks,
    strip_reasoning,
)

CPP = '''#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''

CANDIDATE = '''import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
''' + CPP + '''"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
'''

# the python half of a reply that puts the C++ in its own block
PY_WITHOUT_CPP = CANDIDATE.split("CPP_SOURCE = r")[0] + "lib = load_cpp(CPP_SOURCE)\n" + \
    CANDIDATE.split("lib = load_cpp(CPP_SOURCE)\n")[1]


def fenced(code: str, tag: str = "python", fence: str = "```") -> str:
    return f"{fence}{tag}\n{code}{fence}\n"


def assert_candidate(code: str) -> None:
    tree = ast.parse(code)
    assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)


@pytest.mark.parametrize("tag", ["python", "py", "Python3", "PYTHON", "", "python title=model.py"])
def test_fenced_block_with_or_without_tag(tag):
    reply = "Summary: a relu.\n\n" + fenced(CANDIDATE, tag) + "\nThis is fast."
    assert extract_candidate(reply) == CANDIDATE


def test_indented_block_in_a_list_item():
    indented = "".join("    " + line if line.strip() else line for line in fenced(CANDIDATE).splitlines(True))
    assert extract_candidate("1. The file:\n\n" + indented) == CANDIDATE


def test_info_string_with_a_file_name():
    assert extract_candidate(fenced(CANDIDATE, "python:model_new.py")) == CANDIDATE


def test_tilde_and_long_fences():
    assert extract_candidate(fenced(CANDIDATE, "python", "~~~")) == CANDIDATE
    assert extract_candidate(fenced(CANDIDATE, "python", "````")) == CANDIDATE


def test_picks_the_block_defining_modelnew_among_several():
    reply = ("First, the reference:\n" + fenced("class Model:\n    pass\n") +
             "Usage:\n" + fenced("m = ModelNew()\nprint(m)\n") +
             "The candidate:\n" + fenced(CANDIDATE) + "Test with:\n" + fenced("pytest -q\n", "bash"))
    assert extract_candidate(reply) == CANDIDATE


def test_last_of_several_candidates_wins_and_broken_drafts_lose():
    draft = CANDIDATE.replace("x.numel()", "x.numel(")  # does not parse
    final = CANDIDATE.replace("out = torch.empty_like(x)", "out = torch.empty_like(x)  # final")
    older = CANDIDATE.replace("# final", "")
    assert extract_candidate(fenced(older) + fenced(final) + fenced(draft)) == final


def test_stitches_a_separate_cpp_block():
    for tag in ("cpp", "c++", "C++", "cc"):
        reply = "The kernel:\n" + fenced(CPP, tag) + "\nThe module:\n" + fenced(PY_WITHOUT_CPP)
        code = extract_candidate(reply)
        assert_candidate(code)
        tree = ast.parse(code)
        assigns = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                   for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        assert assigns["CPP_SOURCE"].strip() == CPP.strip()
        # defined before it is used
        assert code.index("CPP_SOURCE = r") < code.index("lib = load_cpp(CPP_SOURCE)")


def test_stitches_cpp_block_that_comes_after_the_python():
    reply = fenced(PY_WITHOUT_CPP) + "\nwith\n" + fenced(CPP, "cpp")
    assert "relu_forward" in extract_candidate(reply)


def test_stitches_an_assignment_from_another_python_block():
    first = 'CPP_SOURCE = r"""\n' + CPP + '"""\n'
    code = extract_candidate(fenced(first) + fenced(PY_WITHOUT_CPP))
    assert_candidate(code)
    assert "relu_forward" in code


def test_no_stitching_of_a_library_object():
    # `lib` is used, not defined, but it is called through, not a source string: nothing to stitch
    code = PY_WITHOUT_CPP.replace("lib = load_cpp(CPP_SOURCE)\n", "")
    out = extract_candidate(fenced(CPP, "cpp") + fenced(code))
    assert out == code and "lib = r" not in out


def test_no_stitching_when_the_name_is_defined():
    reply = fenced(CPP, "cpp") + fenced(CANDIDATE)
    assert extract_candidate(reply) == CANDIDATE


def test_think_sections_are_ignored():
    decoy = CANDIDATE.replace("relu_forward", "decoy_kernel")
    reply = "<think>\nLet me try\n" + fenced(decoy) + "hmm, no.\n</think>\n" + fenced(CANDIDATE)
    assert extract_candidate(reply) == CANDIDATE
    # a stray closing tag (the opening one was in the server's template)
    reply = "reasoning " + fenced(decoy) + "</think>\n\n" + fenced(CANDIDATE)
    assert extract_candidate(reply) == CANDIDATE
    # other spellings
    reply = "<THINKING>" + fenced(decoy) + "</THINKING>" + fenced(CANDIDATE)
    assert extract_candidate(reply) == CANDIDATE


def test_unterminated_think_is_an_actionable_error():
    with pytest.raises(GenerationError, match="unterminated <think>"):
        extract_candidate("<think>\nfirst I will " + fenced(CANDIDATE))


def test_unterminated_final_fence():
    reply = "Summary: x\n```python\n" + CANDIDATE
    assert extract_candidate(reply) == CANDIDATE


def test_cut_off_reply_says_so():
    cut = CANDIDATE[: CANDIDATE.index("lib.relu_forward(") + 20]
    with pytest.raises(GenerationError, match=r"does not parse.*line \d+.*not closed"):
        extract_candidate("```python\n" + cut)


def test_crlf_and_cr_line_endings():
    reply = ("Summary: crlf\r\n" + fenced(CANDIDATE)).replace("\n", "\r\n")
    assert extract_candidate(reply) == CANDIDATE
    assert extract_candidate(fenced(CANDIDATE).replace("\n", "\r")) == CANDIDATE


def test_bare_code_without_fences():
    assert extract_candidate(CANDIDATE) == CANDIDATE
    # prose before and after
    code = extract_candidate("Here is my solution:\n\n" + CANDIDATE + "\nIt is vectorised and fast.\n")
    assert code == CANDIDATE


def test_no_modelnew_is_an_actionable_error():
    with pytest.raises(GenerationError, match="none defines `class ModelNew") as info:
        extract_candidate("Use this:\n" + fenced("def f(x):\n    return x\n"))
    assert info.value.reply.startswith("Use this")
    with pytest.raises(GenerationError, match="no code"):
        extract_candidate("I cannot help with that.")
    with pytest.raises(GenerationError, match="empty"):
        extract_candidate("  \n")


def test_syntax_error_reports_the_line():
    broken = CANDIDATE.replace("    def forward(self, x):", "    def forward(self, x)")
    with pytest.raises(GenerationError, match=r"line 2\d") as info:
        extract_candidate(fenced(broken))
    assert "def forward(self, x)" in str(info.value)


def test_find_blocks_and_strip_reasoning():
    blocks = find_blocks("a\n```cpp\nint x;\n```\nb\n```\nplain\n```\n")
    assert [(b.lang, b.text) for b in blocks] == [("cpp", "int x;\n"), ("", "plain\n")]
    text, unterminated = strip_reasoning("<think>x</think>y")
    assert (text, unterminated) == ("y", False)


def test_extract_summary():
    reply = "Summary: one vectorised pass with OpenMP.\n\n" + fenced(CANDIDATE)
    assert extract_summary(reply) == "one vectorised pass with OpenMP."
    assert extract_summary("**Summary:** fused bias and relu\n" + fenced(CANDIDATE)) == "fused bias and relu"
    assert extract_summary("I tiled the matmul by 64x64 blocks.\n" + fenced(CANDIDATE)).startswith("I tiled")
    assert extract_summary(fenced('"""Blocked softmax."""\n' + CANDIDATE),
                           '"""Blocked softmax."""\n' + CANDIDATE) == "Blocked softmax."


def test_ascend_project_reply_is_extracted_whole():
    """An Ascend C candidate (six strings; ModelNew lives inside model_src) comes out unchanged."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[2] / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text()
    reply = "Plan: tile over 40 cores.\n```python\n" + src + "```\nSummary: double-buffered add"
    assert extract_candidate(reply) == src.strip("\n") + "\n"


def test_kernelbench_style_super_is_rewritten():
    reply = '''```python
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x
```'''
    code = extract_candidate(reply)
    assert "super().__init__()" in code and "super(Model" not in code


# shapes a 1.5B model produced in real runs (issue 15): prose inside the fence, a missing opening fence
def test_a_summary_line_inside_the_fence_is_cut_off():
    reply = "```python\nSummary: a vectorised relu with OpenMP\n" + CANDIDATE + "```\n"
    assert extract_candidate(reply) == CANDIDATE
    reply = "```python\n" + CANDIDATE + "\nSummary: a vectorised relu\n```\n"
    assert ast.parse(extract_candidate(reply)) and "Summary" not in extract_candidate(reply)


def test_prose_after_the_code_inside_the_fence_is_cut_off():
    reply = "```python\n" + CANDIDATE + "\nThis kernel uses one pass over the data and is faster.\n```"
    code = extract_candidate(reply)
    assert "faster" not in code and "class ModelNew" in code and ast.parse(code)


def test_a_missing_opening_fence_keeps_the_code_before_the_closing_one():
    reply = "Here is the kernel:\n\n" + CANDIDATE + "```\n\nSummary: relu in C++\n"
    assert extract_candidate(reply).strip() == CANDIDATE.strip()


def test_a_block_that_stays_broken_after_salvage_is_still_an_error():
    broken = CANDIDATE.replace("def forward(self, x):", "def forward(self, x)")
    with pytest.raises(GenerationError, match="does not parse as Python: line"):
        extract_candidate("```python\nSummary: x\n" + broken + "```")
