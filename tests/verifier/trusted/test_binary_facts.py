"""The facts of a candidate's object (verifier/trusted/binary_facts.py): the readers of the preprocessed unit,
of nm's and of objdump's output, each fed what the tools print."""
import shutil
import subprocess

import pytest

from evokernel.verifier.trusted import binary_facts as bf


def test_literals_do_not_hide_or_fake_code():
    toks = [t for _, t in bf.tokenize([(1, 'auto s = R"(")"; asm("nop"); auto t = "";')])]
    assert "asm" in toks  # the raw string ends at )" -- a naive string regex would swallow asm
    toks = [t for _, t in bf.tokenize([(1, "int n = 1'000; __asm__(\"x\"); int m = 2'0;")])]
    assert "__asm__" in toks  # digit separators are part of numbers, not character literals
    toks = [t for _, t in bf.tokenize([(1, 'const char* s = "asm(\\"nop\\")";')])]
    assert "asm" not in toks
    toks = [t for _, t in bf.tokenize([(1, 'auto s = R"x(a'), (2, ')" asm )x";'), (3, "asm")])]
    assert toks.count("asm") == 1  # a raw string spans lines


II = "\n".join([
    '# 0 "/w/kernel.cpp"',
    '# 1 "/w/kernel.cpp"',
    '# 1 "/usr/include/stdio.h" 1 3 4',
    '# 1 "/usr/include/features.h" 1 3 4',  # entered by stdio.h, not by the candidate
    'int x;',
    '# 2 "/usr/include/stdio.h" 2 3 4',
    'extern int printf(const char*, ...) __asm__("printf");',
    '# 2 "/w/kernel.cpp" 2',
    'int f() { return 1; }',
    '# 1 "/w/evil.h" 1',
    'int g();',
    '# 4 "/w/kernel.cpp" 2',
    'int h() { asm("nop"); return 0; }',
])


def test_only_the_candidates_own_lines_are_read():
    pre = bf.read_preprocessed(II, "/w/kernel.cpp")
    assert [n for n, _ in pre.lines] == [2, 4]
    assert pre.foreign == ["/w/evil.h"]
    assert pre.direct == [(1, "/usr/include/stdio.h"), (3, "/w/evil.h")]  # features.h is stdio.h's include
    assert [n for n, _ in bf.read_preprocessed(II, "/w/kernel.cpp", (4, 5)).lines] == [4]


def test_a_header_outside_the_system_roots_is_foreign_even_when_marked_system():
    ii = '# 1 "/w/k.cpp"\n# 1 "/usr/include/../../w/evil.h" 1 3 4\nint g;\n# 2 "/w/k.cpp" 2\n'
    assert bf.read_preprocessed(ii, "/w/k.cpp").foreign == ["/usr/include/../../w/evil.h"]
    # a verifier-owned include directory counts as a system root when named
    ii = '# 1 "/w/k.cpp"\n# 1 "/opt/evk/include/torch/extension.h" 1 3\nint g;\n# 2 "/w/k.cpp" 2\n'
    assert bf.read_preprocessed(ii, "/w/k.cpp", system_roots=bf.SYSTEM_ROOTS + ("/opt/evk/include/",)).foreign == []


@pytest.mark.parametrize("source", [
    '#line 1 "/usr/include/stdio.h"\nint x;',
    '%:line 7 "/usr/include/x.h"\n',
    '# 12 "/usr/include/x.h" 1 3\n',
    '#\\\nline 1 "x.h"\n',
    '#/* c */line 3\n',
])
def test_line_directives_are_found(source):
    assert bf.line_directives(source)


# a line marker behind every literal and line form the compiler accepts (red team rt10: `R"(")"` made the old
# comment stripper see "/*" as a comment's start, and the marker behind it was never scanned)
_MARKER = '# 1 "/usr/include/stdio.h" 3'
_COVERS = {
    "raw": 'auto a = R"(")";\nauto b = "/*";\n' + _MARKER + '\nauto c = "*/";\n',
    "u8raw": 'auto a = u8R"x(")x";\nauto b = "/*";\n' + _MARKER + '\nauto c = "*/";\n',
    "LRraw": 'auto a = LR"(")";\nauto b = "/*";\n' + _MARKER + '\nauto c = "*/";\n',
    "delimiter": 'auto a = R"ab()")ab";\nauto b = "/*";\n' + _MARKER + '\nauto c = "*/";\n',
    "splice_in_raw": 'auto a = R"(\\\n)";\n' + _MARKER + '\nint z;\n',
    "char_quote": "char q = '\"';\n" + _MARKER + "\nint z;\n",
    "lone_cr": "int a;\r" + _MARKER + "\rint z;\r",
    "comment_first": "/*\n*/ " + _MARKER + "\nint z;\n",
    "has_include": "#if __has_include(</*>)\n#endif\n" + _MARKER + "\n/* */\nint z;\n",
    "if0_apostrophe": "#if 0\nit's\n#endif\n" + _MARKER + "\nint z; // '\n",
    "dollar": 'int a$R = 0; const char* s = a$R"(";\n' + _MARKER + '\nint z; // )"\n',
    "bom": "\ufeff" + _MARKER + "\nint z;\n",
}


@pytest.mark.parametrize("name", sorted(_COVERS))
def test_a_line_marker_behind_a_literal_is_found(name):
    assert bf.line_directives(_COVERS[name]), name


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("name", sorted(_COVERS))
def test_the_scan_finds_every_marker_the_compiler_honours(tmp_path, name):
    (tmp_path / "t.cpp").write_text(_COVERS[name])
    out = subprocess.run(["g++", "-std=gnu++17", "-E", "t.cpp"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "stdio.h" in out  # the compiler honours the marker ...
    assert bf.line_directives(_COVERS[name])  # ... and the scan sees it


def test_markers_inside_literals_are_text():
    assert not bf.line_directives('auto s = R"(\n# 1 "/usr/include/stdio.h" 3\n)";\nint x = 1\'0; // \'\n')


def test_the_compiler_leaving_the_candidates_file_without_an_include_is_a_line_directive():
    ii = ('# 0 "/w/k.cpp"\n# 0 "<built-in>"\n# 0 "<command-line>"\n# 1 "/w/k.cpp"\n#include-free line\n'
          '# 1 "/usr/include/stdio.h" 3\nint hidden;\n')
    pre = bf.read_preprocessed(ii, "/w/k.cpp", include_lines=set())
    assert pre.relabelled == [2] and pre.lines == [(1, "#include-free line")]
    # a marker that claims to enter a header (flag 1) on a line without an #include is one too
    ii = '# 1 "/w/k.cpp"\nint a;\n# 1 "/usr/include/stdio.h" 1 3\nint hidden;\n# 3 "/w/k.cpp" 2\n'
    assert bf.read_preprocessed(ii, "/w/k.cpp", include_lines={5}).relabelled == [2]
    assert bf.read_preprocessed(ii, "/w/k.cpp", include_lines={2}).relabelled == []  # a real #include
    assert bf.read_preprocessed(II, "/w/kernel.cpp", include_lines={1, 3}).relabelled == []


def test_a_raw_string_body_that_looks_like_a_marker_is_the_candidates_text():
    ii = ('# 1 "/w/k.cpp"\nauto s = R"x(\n# 1 "/usr/include/stdio.h" 3\n)x"; auto t = R"(a)"; int n = 1\'0;\n'
          'int after;\n')
    pre = bf.read_preprocessed(ii, "/w/k.cpp", include_lines=set())
    assert pre.relabelled == [] and (4, "int after;") in pre.lines


def test_no_line_directive_in_ordinary_code():
    assert not bf.line_directives('#include <cmath>\n#define N 4\n#pragma omp parallel for\nint x = 1; // #line 3\n')


OBJDUMP = """
kernel.o:     file format elf64-x86-64


Disassembly of section .text:

0000000000000000 <relu>:
   0:\tendbr64
   4:\tvmovups ymm0,YMMWORD PTR [rdi+rax*1]
   9:\tlock add DWORD PTR [rip+0x0],0x1        # 10 <relu+0x10>
  10:\tcs nop WORD PTR [rax+rax*1+0x0]
  1a:\tdata16 cs nop WORD PTR [rax+rax*1+0x0]
  25:\trep stos QWORD PTR es:[rdi],rax
  28:\tnotrack jmp rax
  2b:\tret

0000000000000030 <sneaky>:
  30:\tsyscall
  32:\t(bad)
  33:\trdtsc
  35:\tsyscall
"""


def test_instructions_are_read_with_their_first_function():
    found = bf.parse_instructions(OBJDUMP.splitlines())
    assert found["syscall"] == (2, "sneaky") and found["rdtsc"] == (1, "sneaky") and "(bad)" in found
    for m in ("endbr64", "vmovups", "add", "nop", "stos", "jmp", "ret"):
        assert found[m][1] == "relu", m
    assert not {"lock", "cs", "data16", "rep", "notrack"} & set(found)


def test_symbols_are_paired_with_their_demangled_names():
    rows = bf.parse_symbols(["_ZNSt6thread15_M_start_threadE w", "memcpy U", ""],
                            ["std::thread::_M_start_thread", "memcpy"])
    assert rows == [("_ZNSt6thread15_M_start_threadE", "std::thread::_M_start_thread", True),
                    ("memcpy", "memcpy", False)]
    assert bf.parse_defined(["relu T 0 10", "_ZNSt4swapE W 0 4"], ["relu", "std::swap"]) == [
        ("relu", "relu", "T"), ("_ZNSt4swapE", "std::swap", "W")]


def test_facts_survive_the_json_round_trip_and_refuse_other_versions():
    f = bf.Facts(symbols=[("a", "a", False)], defined=[("b", "b", "T")], instructions={"mov": (3, "f")},
                 tokens=[(1, "x")], includes=["/w/e.h"], direct_includes=[(1, "/usr/include/stdio.h")],
                 line_directives=[2])
    assert bf.Facts.from_json(f.to_json()) == f
    with pytest.raises(ValueError):
        bf.Facts.from_json(f.to_json().replace(bf.FACTS_VERSION, "old"))
