"""The facts of a candidate's native object: what the compiler made of the candidate's code.

The binary judge (binary_judge.py) rules on facts, never on the source text: token pasting, macros, digraphs,
``using namespace`` and weak declarations get past any reading of the text, not past the compiler. Every build
of candidate code compiles the candidate's translation unit into an object of its own (``-c``, with
``-save-temps`` keeping the preprocessed unit); in the build's sandbox, nm and objdump then read that object:

* **undefined symbols** (``nm --undefined-only``, weak ones too, demangled): everything the candidate's code can
  call or read outside itself -- code that headers inline into the object is part of the object;
* **defined symbols** with their kind (``nm --defined-only``): what the object would add to, or replace in, the
  program it is linked into (a strong definition of a library's name, an ifunc);
* **instructions** (``objdump -d -M intel``): the mnemonics the object's code executes, with the function that
  first uses each: a system call or a time-stamp read is an instruction, however it was spelled;
* **the candidate's own lines after preprocessing** (the compiler's line markers say which lines are the
  candidate's), as tokens with literals dropped, **the headers those lines include directly** (resolved paths),
  and every entered file that is not a system header.

Extraction is done once per build, cached with it (``facts.json``), and pure to judge.
"""
from __future__ import annotations

import bisect
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

FACTS_NAME = "facts.json"
FACTS_VERSION = "binary-facts-6"  # 3: __FILE__ names /build (-fmacro-prefix-map); 4: -Werror=date-time; 6: line directives and raw strings read as the compiler reads (rt10)
MAX_SYMBOLS = 20_000
MAX_PREPROCESSED_BYTES = 96 * 1024 * 1024
MAX_DISASSEMBLY_BYTES = 256 * 1024 * 1024

Runner = Callable[[list[str], Path, float, Path], "tuple[int | None, str]"]


@dataclass
class Facts:
    symbols: list[tuple[str, str, bool]] = field(default_factory=list)  # undefined: (mangled, demangled, weak)
    defined: list[tuple[str, str, str]] = field(default_factory=list)  # (mangled, demangled, nm type letter)
    instructions: dict[str, tuple[int, str]] = field(default_factory=dict)  # mnemonic -> (count, first function)
    tokens: list[tuple[int, str]] = field(default_factory=list)  # candidate identifiers/punctuators, line
    includes: list[str] = field(default_factory=list)  # files the TU entered that are not system headers
    direct_includes: list[tuple[int, str]] = field(default_factory=list)  # (line, resolved path) of own #includes
    line_directives: list[int] = field(default_factory=list)
    error: str = ""  # facts could not be extracted (the judge then refuses the build)

    def to_json(self) -> str:
        return json.dumps({"version": FACTS_VERSION, "symbols": self.symbols, "defined": self.defined,
                           "instructions": self.instructions, "tokens": self.tokens, "includes": self.includes,
                           "direct_includes": self.direct_includes, "line_directives": self.line_directives,
                           "error": self.error})

    @classmethod
    def from_json(cls, text: str) -> "Facts":
        d = json.loads(text)
        if d.get("version") != FACTS_VERSION:
            raise ValueError("facts of another version")
        return cls([tuple(s) for s in d["symbols"]], [tuple(s) for s in d["defined"]],
                   {k: (int(v[0]), str(v[1])) for k, v in d["instructions"].items()},
                   [tuple(t) for t in d["tokens"]], list(d["includes"]), [tuple(i) for i in d["direct_includes"]],
                   list(d["line_directives"]), str(d.get("error", "")))


# --- the preprocessed translation unit ---------------------------------------------------------------

# A marker of the preprocessed output: # <line> "<file>" <flags>
_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"((?: \d)*)\s*$')

# C++ tokens, in priority order: raw strings (which may hold quotes and span lines), strings, pp-numbers
# (which may hold digit separators), character literals, identifiers, ::, any other character.
_TOKEN = re.compile(
    r'(?P<raw>(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=d)")'
    r'|(?P<str>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")'
    r"|(?P<num>\.?\d(?:[eEpP][+-]|'[0-9A-Za-z_]|[\w.])*)"
    r"|(?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')"
    r"|(?P<id>[A-Za-z_]\w*)"
    r"|(?P<scope>::)"
    r"|(?P<punct>\[\[|\]\]|[^\s])"
)

# where system headers live: a header reached by <../../etc/x> through a system directory is marked as a
# system header by the compiler, but does not live here
SYSTEM_ROOTS = ("/usr/", sys.base_prefix.rstrip("/") + "/", sys.prefix.rstrip("/") + "/")


# literals on one line of the preprocessed unit: a raw string's opening (its body may span lines: the compiler
# prints it verbatim, so a body line that looks like a line marker is string text), strings, pp-numbers (whose
# digit separators are not quotes), character literals
_LINE_LITERAL = re.compile(
    r'(?P<raw>(?<![\w$])(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\()'
    r'|(?<![\w$])(?:u8|u|U|L)?"(?:\\.|[^"\\])*"'
    r"|(?<![\w$])\.?\d(?:[eEpP][+-]|'[0-9A-Za-z_]|[\w.])*"
    r"|(?<![\w$])(?:u8|u|U|L)?'(?:\\.|[^'\\])*'")


def _open_raw(line: str, pos: int = 0) -> str | None:
    """The closing sequence of a raw string ``line`` leaves open (from ``pos``), or None."""
    while True:
        m = _LINE_LITERAL.search(line, pos)
        if m is None:
            return None
        if m.group("raw") is None:
            pos = m.end()
            continue
        close = ")" + m.group("d") + '"'
        k = line.find(close, m.end())
        if k < 0:
            return close
        pos = k + len(close)


def _unescape(path: str) -> str:
    return path.replace('\\"', '"').replace("\\\\", "\\")


@dataclass
class Preprocessed:
    lines: list[tuple[int, str]]  # (source line, text) of the candidate's own lines
    foreign: list[str]  # entered files that are not system headers
    direct: list[tuple[int, str]]  # (line, path) of the files the candidate's own lines include
    relabelled: list[int] = field(default_factory=list)  # own lines after which the compiler's file changed unasked


def read_preprocessed(ii_text: str, own_file: str, line_range: tuple[int, int] | None = None,
                      system_roots: tuple[str, ...] = SYSTEM_ROOTS,
                      host_path: Callable[[str], str] = lambda p: p,
                      include_lines: "set[int] | None" = None) -> Preprocessed:
    """The candidate's own lines of a preprocessed unit (optionally only source lines ``line_range[0] <= n <
    line_range[1]``), the files its lines include directly, and every entered file that is not a system header
    (flag 3 of its marker, and a path under ``system_roots``). ``host_path``: a path as the compiler named it
    (inside the build sandbox, build_sandbox.py) -> the host's, which ``own_file`` and the roots are.

    A line is the candidate's when the compiler read it from ``own_file``: the compiler leaves the candidate's file
    only by entering an include (a marker with flag 1) on a line that holds an ``#include`` (``include_lines``, from
    the source text). Any other change of file while in ``own_file`` -- a ``#line`` / ``# n "file"`` the candidate
    wrote, however it was hidden from the text scan -- is listed in ``relabelled``."""
    out: list[tuple[int, str]] = []
    relabelled: list[int] = []
    foreign: list[str] = []
    direct: list[tuple[int, str]] = []
    current, line = "", 0
    raw_close: str | None = None  # the end of a raw string open since an earlier line
    for raw in ii_text.split("\n"):
        if raw_close is not None:
            k = raw.find(raw_close)
            if k >= 0:  # the raw string ends on this line; another may open after it
                raw_close = _open_raw(raw, k + len(raw_close))
        elif raw.startswith("# ") and (m := _MARKER.match(raw)) is not None:
            new_line, new_file = int(m.group(1)), host_path(_unescape(m.group(2)))
            flags = m.group(3).split()
            # (line 0: the compiler's preamble, <built-in> and <command-line>, before the file's first line)
            if current == own_file and line > 0 and new_file != own_file and (
                    "1" not in flags or (include_lines is not None and line not in include_lines)):
                relabelled.append(line)
            if "1" in flags:
                if current == own_file and (line_range is None or line_range[0] <= line < line_range[1]):
                    direct.append((line, new_file))
                if new_file != own_file and ("3" not in flags or
                                             not os.path.normpath(new_file).startswith(system_roots)):
                    foreign.append(new_file)
            line, current = new_line, new_file
            continue
        elif 'R"' in raw:
            raw_close = _open_raw(raw)
        if current == own_file and (line_range is None or line_range[0] <= line < line_range[1]):
            out.append((line, raw))
        line += 1
    return Preprocessed(out, foreign, direct, relabelled)


def tokenize(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Identifier, ``::``, ``[[``/``]]`` and punctuation tokens with their source line (literals dropped)."""
    if not lines:
        return []
    text = "\n".join(t for _, t in lines)
    starts = [n for n, _ in lines]
    offsets, pos = [], 0
    for _, t in lines:
        offsets.append(pos)
        pos += len(t) + 1
    tokens: list[tuple[int, str]] = []
    for m in _TOKEN.finditer(text):
        if m.lastgroup in ("raw", "str", "num", "chr", "d"):
            continue
        tokens.append((starts[bisect.bisect_right(offsets, m.start()) - 1], m.group(0)))
    return tokens


_INCLUDE_DIRECTIVE = re.compile(r"^[\ufeff \t\f\v]*(?:#|%:)[ \t\f\v]*include(?:_next)?\b", re.M)
_LINE_DIRECTIVE = re.compile(r"^[\ufeff \t\f\v]*(?:#|%:)[ \t\f\v]*(?:line\b|\d)", re.M)


def line_directives(source: str) -> list[int]:
    """Lines of ``#line`` / ``# <n>`` directives: a ``#line`` would relabel the candidate's lines as a header's, so
    it is refused in the source text itself. The text is read as the compiler reads it (source_text.lex_source:
    line endings, splices, comments, every literal form -- raw strings, prefixes, digit separators -- and header
    names), so no literal or comment can hide a directive from this scan."""
    from evokernel.source_text import lex_source

    code = lex_source(source, blank_strings=True, join_splices=True)
    return [code.count("\n", 0, m.start()) + 1 for m in _LINE_DIRECTIVE.finditer(code)]


def include_lines(source: str) -> set[int]:
    """Lines of the ``#include`` / ``#include_next`` directives of ``source``, read as line_directives reads it."""
    from evokernel.source_text import lex_source

    code = lex_source(source, blank_strings=True, join_splices=True)
    return {code.count("\n", 0, m.start()) + 1 for m in _INCLUDE_DIRECTIVE.finditer(code)}


# --- symbols -------------------------------------------------------------------------------------------

def parse_symbols(raw_lines: Iterable[str], demangled_lines: Iterable[str]) -> list[tuple[str, str, bool]]:
    """``nm --undefined-only --format=posix`` lines and c++filt's output for their names."""
    rows = []
    for raw, dem in zip(raw_lines, demangled_lines):
        parts = raw.split()
        if len(parts) < 2:
            continue
        name = parts[0].split("@", 1)[0]
        rows.append((name, dem.strip().split("@", 1)[0], parts[1] in ("w", "v")))
        if len(rows) >= MAX_SYMBOLS:
            break
    return rows


def parse_defined(raw_lines: Iterable[str], demangled_lines: Iterable[str]) -> list[tuple[str, str, str]]:
    """``nm --defined-only --format=posix`` lines (name, type letter, ...) with their demangled names."""
    rows = []
    for raw, dem in zip(raw_lines, demangled_lines):
        parts = raw.split()
        if len(parts) < 2:
            continue
        rows.append((parts[0].split("@", 1)[0], dem.strip().split("@", 1)[0], parts[1]))
        if len(rows) >= MAX_SYMBOLS:
            break
    return rows


# --- instructions -------------------------------------------------------------------------------------

# prefixes objdump prints before the mnemonic (segment overrides, lock/rep, CET/MPX hints, padding)
_PREFIXES = frozenset({"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "bnd", "data16", "data32",
                       "addr16", "addr32", "cs", "ds", "es", "ss", "fs", "gs", "rex", "rex.w", "rex.r", "rex.x",
                       "rex.b", "rex.wr", "rex.wx", "rex.wb", "rex.rx", "rex.rb", "rex.xb", "rex.wrx", "rex.wrb",
                       "rex.wxb", "rex.rxb", "rex.wrxb", "xacquire", "xrelease", "{vex}", "{vex3}", "{evex}"})
_FUNC = re.compile(r"^[0-9a-f]+ <(.*)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\t(.*)$")


def parse_instructions(lines: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Mnemonics of ``objdump -d -M intel --no-show-raw-insn`` output -> (count, first function using it)."""
    found: dict[str, tuple[int, str]] = {}
    func = ""
    for raw in lines:
        m = _INSN.match(raw)
        if m is None:
            f = _FUNC.match(raw.strip())
            if f:
                func = f.group(1)
            continue
        words = m.group(1).split()
        while words and words[0].lower() in _PREFIXES:
            words = words[1:]
        mnemonic = words[0].lower() if words else "(prefix only)"
        if mnemonic.startswith("(bad"):
            mnemonic = "(bad)"
        count, first = found.get(mnemonic, (0, func))
        found[mnemonic] = (count + 1, first)
    return found


# --- extraction in the build's sandbox ------------------------------------------------------------------

OBJECT_SCRIPT = (
    'nm --undefined-only --format=posix "$1" > "$2.u" && cut -d" " -f1 "$2.u" | sed "s/@.*//" | c++filt > "$2.ud" && '
    'nm --defined-only --format=posix "$1" > "$2.d" && cut -d" " -f1 "$2.d" | sed "s/@.*//" | c++filt > "$2.dd" && '
    'objdump -d -M intel --no-show-raw-insn "$1" > "$2.s"')


def extract(work: Path, obj: Path, preprocessed: Path | None, own_file: str, source: str,
            runner: Runner, line_range: tuple[int, int] | None = None,
            system_roots: tuple[str, ...] = SYSTEM_ROOTS, host_path: Callable[[str], str] = lambda p: p) -> Facts:
    """Facts of the candidate's object ``obj`` built in ``work`` (nm, c++filt and objdump run in the build
    sandbox; their output and the preprocessed unit are parsed here and deleted afterwards)."""
    facts = Facts(line_directives=line_directives(source))
    out = work / "facts"
    rc, log = runner(["/bin/sh", "-c", OBJECT_SCRIPT, "sh", str(obj), str(out)], work, 120.0, work)
    try:
        if rc != 0:
            facts.error = f"could not read the object's symbols and code: {log.strip()[-300:]}"
        elif Path(f"{out}.s").stat().st_size > MAX_DISASSEMBLY_BYTES:
            facts.error = "the object's code is too large to judge"
        else:
            def read(suffix: str) -> list[str]:
                return Path(f"{out}.{suffix}").read_text(errors="replace").splitlines()

            facts.symbols = parse_symbols(read("u"), read("ud"))
            facts.defined = parse_defined(read("d"), read("dd"))
            with open(f"{out}.s", errors="replace") as f:
                facts.instructions = parse_instructions(f)
        if preprocessed is None or not preprocessed.exists():
            facts.error = facts.error or "the compiler left no preprocessed output"
        elif preprocessed.stat().st_size > MAX_PREPROCESSED_BYTES:
            facts.error = "the preprocessed translation unit is too large to judge"
        else:
            pre = read_preprocessed(preprocessed.read_text(errors="replace"), own_file, line_range, system_roots,
                                    host_path, include_lines(Path(own_file).read_text(errors="replace")))
            facts.tokens, facts.includes, facts.direct_includes = tokenize(pre.lines), pre.foreign[:20], pre.direct
            facts.line_directives = sorted(set(facts.line_directives) | set(pre.relabelled))
    finally:
        for suffix in ("u", "ud", "d", "dd", "s"):
            Path(f"{out}.{suffix}").unlink(missing_ok=True)
        if preprocessed is not None:
            for p in preprocessed.parent.glob("*.ii"):
                p.unlink(missing_ok=True)
            for p in preprocessed.parent.glob("*.s"):
                p.unlink(missing_ok=True)
    return facts
