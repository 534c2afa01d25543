"""Pull the candidate file out of a model's reply.

Rules, in order:

1. Line endings are normalised (CRLF/CR -> LF). Reasoning sections (``<think>...</think>``, also
   ``<thinking>``/``<reasoning>``) are dropped, their content ignored; a reply that opens with a stray
   ``</think>`` loses everything before it; an unterminated ``<think>`` swallows the rest.
2. Fenced blocks (```` ``` ```` or ``~~~``, any length, with or without a language tag, indented
   blocks dedented) are found line by line; an unterminated last fence runs to the end of the reply.
3. Among the blocks that define ``class ModelNew``, python-tagged (python, py, python3, ...) or
   untagged ones are preferred, then ones that parse, then the last one (a model's final answer comes
   after its drafts).
4. If that block uses a name it never defines (``CPP_SOURCE``) and the reply has a separate C++
   block (cpp, c++, c, cc, cxx, h, hpp), the C++ is stitched in as ``NAME = r\"\"\"...\"\"\"`` before the
   first top-level statement that uses the name.
5. Without fences, a reply that is bare code (possibly with prose before or after) is accepted if a
   piece of it defining ``class ModelNew`` parses. The same holds for code before the first fence
   (a missing opening fence: the first fence closes the code), and for a fenced block that does not
   parse because prose got into it (a ``Summary:`` line inside the fence, an explanation after the
   code): the prose is cut off when what is left parses.

6. ``super(Model, self)`` (KernelBench's own files write it; models copy it into ``ModelNew``, where it fails
   at run time because ModelNew is not a Model) becomes ``super()``.

A :class:`GenerationError` says what was wrong when there is no ``ModelNew`` or the code does not
parse (with the line number).
"""
from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass

from evokernel.generators.base import GenerationError

__all__ = ["CodeBlock", "extract_candidate", "extract_summary", "find_blocks", "strip_reasoning"]

PY_TAGS = {"", "python", "py", "python3", "py3", "python2", "ipython", "pycon"}
CPP_TAGS = {"cpp", "c++", "c", "cc", "cxx", "h", "hpp", "hxx", "cuda", "cu"}

_MODELNEW_RE = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.MULTILINE)
_THINK_TAGS = ("think", "thinking", "reasoning")
_FENCE_OPEN_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_BUILTINS = set(dir(builtins))


@dataclass
class CodeBlock:
    lang: str  # lower-cased first word of the info string ("" when untagged)
    text: str
    start_line: int  # line of the opening fence in the normalised reply (1-based)
    closed: bool = True

    @property
    def is_python(self) -> bool:
        return self.lang in PY_TAGS

    @property
    def is_cpp(self) -> bool:
        return self.lang in CPP_TAGS


def _normalise(reply: str) -> str:
    return (reply or "").replace("\r\n", "\n").replace("\r", "\n")


def strip_reasoning(reply: str) -> tuple[str, bool]:
    """``(reply without reasoning sections, whether a reasoning section was left unterminated)``."""
    text = _normalise(reply)
    unterminated = False
    for tag in _THINK_TAGS:
        text = re.sub(rf"<{tag}\b[^>]*>.*?</{tag}\s*>", "", text, flags=re.DOTALL | re.IGNORECASE)
        close = re.search(rf"</{tag}\s*>", text, flags=re.IGNORECASE)
        if close:  # the opening tag was part of the prompt template (some servers do this)
            text = text[close.end():]
        opening = re.search(rf"<{tag}\b[^>]*>", text, flags=re.IGNORECASE)
        if opening:
            text = text[: opening.start()]
            unterminated = True
    return text, unterminated


def find_blocks(text: str) -> list[CodeBlock]:
    """Fenced code blocks of ``text`` (already normalised), in order."""
    blocks: list[CodeBlock] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN_RE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        info = m.group("info").strip()
        lang = re.split(r"[\s:,{}]+", info.lstrip("{."))[0].lower() if info else ""
        body: list[str] = []
        j = i + 1
        closed = False
        close_re = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while j < len(lines):
            if close_re.match(lines[j]):
                closed = True
                break
            body.append(lines[j])
            j += 1
        # a block indented inside a list item: its code is indented as much as its fence
        text = textwrap.dedent("\n".join(body)) if m.group("indent") else "\n".join(body)
        blocks.append(CodeBlock(lang=lang, text=text.strip("\n") + "\n", start_line=i + 1, closed=closed))
        i = j + 1
    return blocks


def _parse_error(code: str) -> SyntaxError | None:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError) as exc:  # e.g. null bytes
        err = SyntaxError(str(exc))
        err.lineno = 0
        return err
    return None


def _undefined_names(tree: ast.Module) -> list[str]:
    """Names read somewhere in the module but bound nowhere in it, in order of first use."""
    bound: set[str] = set()
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
            elif node.id not in used:
                used.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return [n for n in used if n not in bound and n not in _BUILTINS]


def _looks_like_source_name(name: str) -> bool:
    return bool(re.search(r"(src|source|code|cpp|cxx|kernel)", name, re.IGNORECASE))


def _used_as_value(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is used as a plain value somewhere (not only as ``name.attr`` or ``name(...)``)."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue
            if isinstance(parent, ast.Call) and parent.func is node:
                continue
            return True
    return False


def _raw_literal(cpp: str) -> str:
    body = cpp if cpp.endswith("\n") else cpp + "\n"
    if '"""' not in body:
        return 'r"""\n' + body + '"""'
    if "'''" not in body:
        return "r'''\n" + body + "'''"
    return repr(body)


def _assignment_in(block: CodeBlock, name: str) -> str | None:
    """The source of a top-level ``name = ...`` in another python block, if it has one."""
    try:
        tree = ast.parse(block.text)
    except SyntaxError:
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.get_source_segment(block.text, stmt)
    return None


def _stitch(code: str, cpp_blocks: list[CodeBlock], py_blocks: list[CodeBlock] = ()) -> str:
    """Define the C++ source names a python block uses but leaves to a separate C++ block (or to a
    separate python block that assigns them)."""
    if not cpp_blocks and not py_blocks:
        return code
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    missing = [n for n in _undefined_names(tree) if _looks_like_source_name(n) and _used_as_value(tree, n)]
    if not missing:
        return code
    definitions: list[tuple[str, str]] = []
    for name in list(missing):
        for block in reversed(py_blocks):
            if (segment := _assignment_in(block, name)) is not None:
                definitions.append((name, segment + "\n"))
                missing.remove(name)
                break
    if missing and cpp_blocks:
        pairs = list(zip(missing, cpp_blocks)) if len(cpp_blocks) > 1 else [(missing[0], cpp_blocks[0])]
        definitions += [(name, f"{name} = {_raw_literal(block.text)}\n") for name, block in pairs]
    lines = code.split("\n")
    # insert each definition before the first top-level statement that mentions the name
    inserts: list[tuple[int, str]] = []
    for name, definition in definitions:
        line = len(lines)
        for stmt in tree.body:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
                first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
                line = first - 1
                break
        inserts.append((line, definition))
    for line, text in sorted(inserts, key=lambda x: x[0], reverse=True):
        lines[line:line] = text.split("\n")
    return "\n".join(lines)


def _bare_code(text: str) -> str | None:
    """A piece of unfenced text defining ModelNew that parses: the whole text, or with prose cut off."""
    if not _MODELNEW_RE.search(text):
        return None
    if _parse_error(text) is None:
        return text
    lines = text.split("\n")
    start_re = re.compile(r"^(import |from |\"\"\"|'''|#|@|class |def |[A-Za-z_]\w*\s*=)")
    starts = [k for k, ln in enumerate(lines) if start_re.match(ln)][:20]
    cls = next(k for k, ln in enumerate(lines) if _MODELNEW_RE.match(ln))
    for s in starts:
        if s > cls:
            break
        for e in range(len(lines), max(cls, len(lines) - 60), -1):
            piece = "\n".join(lines[s:e]).strip("\n") + "\n"
            if _MODELNEW_RE.search(piece) and _parse_error(piece) is None:
                return piece
    return None


_SUMMARY_LINE_RE = re.compile(r"^[ \t>*_#-]*summary[ \t*_]*:.*$\n?", re.IGNORECASE | re.MULTILINE)


def _drop_summary_lines(code: str) -> str:
    return _SUMMARY_LINE_RE.sub("", code)


_CODE_LINE_RE = re.compile(r"^(import |from |class |def |async |@|#|\"\"\"|\'\'\'|if |elif |else|for |while |with |try|"
                           r"except|finally|return|raise|pass\b|[A-Za-z_][\w.]*\s*(=|\(|\[|:|\+=|-=)|[)\]}])")


def _is_prose(line: str) -> bool:
    return bool(line.strip()) and not line[:1].isspace() and not _CODE_LINE_RE.match(line)


def _trim_prose(code: str) -> str:
    """``code`` without prose lines before its first or after its last code line (never inside)."""
    lines = code.split("\n")
    while lines and (not lines[0].strip() or _is_prose(lines[0])):
        lines.pop(0)
    while lines and (not lines[-1].strip() or _is_prose(lines[-1])):
        lines.pop()
    return "\n".join(lines) + "\n"


def _salvage(code: str) -> str | None:
    """A block that does not parse because prose got into it (a ``Summary:`` line inside the fence,
    an explanation before or after the code: shapes small models produce): the code without it, if
    that parses and still defines ModelNew; else None. Code lines are never dropped."""
    cleaned = _trim_prose(_drop_summary_lines(code))
    if _MODELNEW_RE.search(cleaned) and _parse_error(cleaned) is None:
        return cleaned
    return None


def _error(message: str, reply: str) -> GenerationError:
    return GenerationError(message, reply=reply)


_SUPER_MODEL = re.compile(r"\bsuper\(\s*Model\s*,\s*self\s*\)")


def _fix_super(code: str) -> str:
    return _SUPER_MODEL.sub("super()", code)


def extract_candidate(reply: str) -> str:
    """The candidate file in ``reply``; :class:`GenerationError` when there is none."""
    text, unterminated_thinking = strip_reasoning(reply)
    if not text.strip():
        if unterminated_thinking:
            raise _error("no candidate: the reply ended inside an unterminated <think> section (the model "
                         "probably ran out of output tokens while reasoning); reply with the code after "
                         "the reasoning, or allow more output tokens", reply)
        raise _error("no candidate: the reply is empty; reply with one ```python block holding the whole "
                     "candidate file (as the system prompt describes it: for the cpu backend imports, the C++ source, load_cpp and class ModelNew; for Ascend C the six strings project_json_src ... model_src)", reply)
    blocks = find_blocks(text)
    with_model = [b for b in blocks if _MODELNEW_RE.search(b.text)]
    if with_model:
        def rank(b: CodeBlock) -> tuple[int, int, int]:
            return (1 if b.is_python else 0, 1 if _parse_error(b.text) is None else 0, b.start_line)

        chosen = max(with_model, key=rank)
        others = [b for b in blocks if b is not chosen and not _MODELNEW_RE.search(b.text)]
        code = _stitch(chosen.text, [b for b in others if b.is_cpp], [b for b in others if b.is_python])
        err = _parse_error(code)
        if err is not None and (salvaged := _salvage(code)) is not None:
            code, err = salvaged, None
        if err is not None:
            where = f"line {err.lineno}" if err.lineno else "somewhere"
            bad = ""
            if err.lineno and 0 < err.lineno <= len(code.split("\n")):
                bad = f" near {code.split(chr(10))[err.lineno - 1].strip()[:80]!r}"
            hint = (" (the code block is not closed: the reply may have been cut off by the output token "
                    "limit)" if not chosen.closed else "")
            raise _error(f"the candidate does not parse as Python: {where} of the code block: "
                         f"{err.msg}{bad}{hint}; reply with one complete, syntactically valid file", reply)
        return _fix_super(code.strip("\n") + "\n")
    if blocks and _MODELNEW_RE.search(head := "\n".join(text.split("\n")[: blocks[0].start_line - 1])):
        # the code came before the first fence: its opening fence is missing, and what we took for an
        # opening fence is its closing one
        bare = _salvage(head)
        if bare is not None:
            return _fix_super(bare.strip("\n") + "\n")
    if not blocks:
        bare = _bare_code(text.strip("\n") + "\n")
        if bare is not None:
            return _fix_super(bare.strip("\n") + "\n")
        if _MODELNEW_RE.search(text):
            err = _parse_error(text)
            line = f" (line {err.lineno}: {err.msg})" if err is not None and err.lineno else ""
            raise _error("the reply has no fenced code block and its text does not parse as Python"
                         f"{line}; put the whole candidate file in one ```python block", reply)
    n = len(blocks)
    what = (f"the reply has {n} code block{'s' if n != 1 else ''} but none defines" if n else
            "the reply has no code block and its text does not define")
    raise _error(f"no candidate: {what} `class ModelNew(nn.Module)`; reply with one ```python block "
                 "holding the whole candidate file (as the system prompt describes it: for the cpu backend imports, the C++ source, load_cpp and class ModelNew; for Ascend C the six strings project_json_src ... model_src)", reply)


_SUMMARY_RE = re.compile(r"^[ \t>*_#-]*summary[ \t*_]*:[ \t*_]*(?P<text>.+?)[ \t*_]*$", re.IGNORECASE | re.MULTILINE)


def extract_summary(reply: str, source: str | None = None, max_chars: int = 240) -> str:
    """One line saying what the candidate tries: the reply's ``Summary:`` line, else the first prose
    line outside code, else the first line of the candidate's docstring; "" when there is none."""
    text, _ = strip_reasoning(reply)
    outside = text
    for b in find_blocks(text):
        outside = outside.replace(b.text.strip("\n"), "")
    m = _SUMMARY_RE.search(outside)
    if m:
        return m.group("text").strip()[:max_chars]
    for line in outside.split("\n"):
        line = line.strip().strip("*_#>- ")
        if line and not line.startswith(("```", "~~~")) and len(line) > 10:
            return line[:max_chars]
    if source:
        try:
            doc = ast.get_docstring(ast.parse(source))
        except SyntaxError:
            doc = None
        if doc:
            return doc.strip().split("\n")[0][:max_chars]
    return ""
