"""Reading C/C++ source as the compiler's first phases do (evokernel/source_text.py): comments go, literals of
every form the compiler accepts stay whole, line numbers stay the compiler's."""
import pytest

from evokernel.source_text import lex_source, strip_comments


@pytest.mark.parametrize("literal", ['R"(")"', 'u8R"(")"', 'uR"(")"', 'UR"(")"', 'LR"(")"', 'R"xy(")")xy"',
                                     'R"(a\n")"', "'\"'", "u8'\"'", 'u"\\""'])
def test_a_literal_holding_a_quote_hides_no_code(literal):
    # the quote inside the literal must not open a string: "/*" below is a string, not a comment's start
    src = f'auto a = {literal};\nauto b = "/*";\nint hidden;\nauto c = "*/";\n'
    assert "int hidden;" in strip_comments(src)
    assert "int hidden;" in lex_source(src, blank_strings=True)


def test_comments_go_and_line_numbers_stay():
    src = "int a; // x \\\n still comment\nint b; /* one\ntwo */ int c;\r\nint d;\rint e;\n"
    out = strip_comments(src)
    assert "still comment" not in out and "one" not in out
    assert out.split("\n")[5] == "int e;"  # CR LF and a lone CR each end a line, as for g++
    assert out.count("\n") == 6


def test_raw_string_bodies_are_verbatim_and_blanked_on_request():
    src = 'auto s = R"d(// not a comment\n/* nor this */)d"; int x; // gone\n'
    assert "// not a comment\n/* nor this */" in strip_comments(src)
    blank = lex_source(src, blank_strings=True)
    assert blank == 'auto s = R""\n; int x;  \n'
    assert lex_source("int a = 1'000; int b = 'c'; char d = u8'e';", blank_strings=True) == \
        "int a = 1'000; int b = ''; char d = u8'';"


def test_splices_join_a_logical_line_without_moving_later_lines():
    src = "#\\\n line 1\nint a;\n# de\\  \nfine X\nint b;\n"
    out = lex_source(src, join_splices=True)
    lines = out.split("\n")
    assert lines[0] == "# line 1" and lines[2] == "int a;" and lines[3] == "# define X" and lines[5] == "int b;"


def test_header_names_are_not_lexed_as_comments_or_strings():
    src = '#if __has_include(</*>)\n#endif\nint seen;\n#include <a"b>\nint also;\n'
    out = lex_source(src, blank_strings=True)
    assert "int seen;" in out and "int also;" in out
