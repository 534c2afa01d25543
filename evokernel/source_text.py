"""Reading C/C++ source text as the compiler's first translation phases do (line endings, line splices, comments,
literals), for the text rules over native sources and the search for line directives. Pure Python, no torch."""
from __future__ import annotations

import bisect
import re

# --- reading C/C++ source as the compiler's first phases do ----------------------------------------------
# Line endings: CR LF, LF and a lone CR each end a line (g++ reads all three). A line splice is a backslash,
# optional horizontal whitespace (g++ accepts it, with a warning) and a line ending. Literals: ordinary strings and
# character literals (prefixes u8 u U L; they end at the end of their line), raw strings (prefixes R u8R uR UR LR,
# a delimiter of up to 16 characters, no splices inside), pp-numbers (with ' digit separators), and the header
# name of an #include / __has_include, which holds its characters verbatim.
_SPLICE = re.compile(r"\\[ \t\f\v]*\n")
_RAW_PREFIXES = frozenset({"R", "u8R", "uR", "UR", "LR"})
_STR_PREFIXES = frozenset({"u8", "u", "U", "L"})
_RAW_DELIM = re.compile(r'[^ ()\\\t\v\f\n"]{0,16}\(')


def normalize_newlines(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")


def lex_source(source: str, *, blank_strings: bool = False, join_splices: bool = False) -> str:
    """``source`` with every comment replaced by a space (its line endings kept), as the compiler's translation
    phases 1-3 see it; line endings normalised to LF, so line numbers are the compiler's. ``blank_strings``: string
    and character literals (raw ones too) become empty (``""`` / ``''``, their line endings kept).
    ``join_splices``: line splices are removed and their line endings moved to the end of the logical line, so a
    logical line (a directive) starts on the output line of its first physical line."""
    src = normalize_newlines(source)
    # the logical text (splices removed) and, for each of its characters, where it is in ``src``
    logical: list[str] = []
    where: list[int] = []
    pos = 0
    for m in _SPLICE.finditer(src):
        logical.append(src[pos:m.start()])
        where.extend(range(pos, m.start()))
        pos = m.end()
    logical.append(src[pos:])
    where.extend(range(pos, len(src)))
    text = "".join(logical)
    where.append(len(src))
    n = len(text)
    out: list[str] = []
    deferred = 0  # line endings of splices not yet written (join_splices)

    def code(a: int, b: int) -> None:  # logical a..b as code
        nonlocal deferred
        chunk = src[where[a]:where[b]] if b > a else ""
        if not join_splices or ("\n" not in chunk and "\\" not in chunk):
            out.append(chunk)
            return
        for part in re.split(r"(\n)", _SPLICE.sub(lambda m: "\0", chunk)):
            if part == "\n":
                out.append("\n" * (deferred + 1))
                deferred = 0
            else:
                deferred += part.count("\0")
                out.append(part.replace("\0", ""))

    def gap(a_src: int, b_src: int, keep: str) -> None:  # src a..b replaced by ``keep`` and its line endings
        nonlocal deferred
        nl = src.count("\n", a_src, b_src)
        if join_splices:
            deferred += nl
            out.append(keep)
        else:
            out.append(keep + "\n" * nl)

    i = 0
    # a header name follows `#include` (or include_next, import) at a line's start and `__has_include(`: its
    # characters are verbatim (`<a//b>` holds no comment). line_tokens: the line's tokens so far (up to two)
    line_tokens: list[str] = []
    header = ""  # "paren": after __has_include, "name": a header name may follow
    while i < n:
        c = text[i]
        if c == "\n":
            code(i, i + 1)
            i += 1
            line_tokens, header = [], ""
        elif c in " \t\f\v":
            code(i, i + 1)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            gap(where[i], where[j], " ")
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            gap(where[i], where[j], " ")
            i = j
        elif c == "<" and header == "name":
            eol = text.find("\n", i)
            gt = text.find(">", i, n if eol < 0 else eol)
            j = gt + 1 if gt > 0 else i + 1
            code(i, j)
            i = j
            header = ""
        elif c.isalpha() or c in "_$" or ord(c) > 127:
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_$" or ord(text[j]) > 127):
                j += 1
            word = text[i:j]
            if word in ("__has_include", "__has_include_next"):
                header = "paren"
            elif word in ("include", "include_next", "import") and line_tokens in (["#"], ["%:"]):
                header = "name"
            else:
                header = ""
            if len(line_tokens) < 2:
                line_tokens.append(word)
            if j < n and text[j] == '"' and word in _RAW_PREFIXES:
                # a raw string: its delimiter and body are read from the physical text (no splices inside)
                body = where[j] + 1
                d = _RAW_DELIM.match(src, body)
                if d is None:  # an invalid delimiter is a compile error; read on as code
                    code(i, j)
                    i = j
                    continue
                close = src.find(")" + d.group(0)[:-1] + '"', d.end())
                close_end = len(src) if close < 0 else close + len(d.group(0)) + 1
                code(i, j)  # the prefix (which may hold splices)
                if blank_strings:
                    gap(where[j], close_end, '""')
                else:
                    out.append(src[where[j]:close_end])
                i = bisect.bisect_left(where, close_end)
            elif j < n and text[j] in "\"'" and word in _STR_PREFIXES:
                code(i, j)
                i = j
            else:
                code(i, j)
                i = j
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            header = ""
            line_tokens.append("0")
            j = i + 1
            while j < n:
                if text[j] in "eEpP" and j + 1 < n and text[j + 1] in "+-":
                    j += 2
                elif text[j] == "'" and j + 1 < n and (text[j + 1].isalnum() or text[j + 1] == "_"):
                    j += 2
                elif text[j].isalnum() or text[j] in "._":
                    j += 1
                else:
                    break
            code(i, j)
            i = j
        elif c in "\"'":
            header = ""
            line_tokens.append(c)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" and j + 1 < n and text[j + 1] != "\n" else 1
            end = j + 1 if j < n and text[j] == c else j  # unterminated: the literal ends with its line
            if blank_strings:
                gap(where[i], where[end], c + c)
            else:
                code(i, end)
            i = end
        else:
            tok = "%:" if text.startswith("%:", i) else c
            header = "name" if header == "paren" and tok == "(" else ""
            if len(line_tokens) < 2:
                line_tokens.append(tok)
            code(i, i + len(tok))
            i += len(tok)
    out.append("\n" * deferred)
    return "".join(out)


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments (keeping string literals and line numbers intact), reading raw strings,
    character literals, digit separators and line splices as the compiler does (``lex_source``)."""
    return lex_source(source)
