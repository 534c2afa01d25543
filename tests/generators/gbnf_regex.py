"""A GBNF grammar without recursion as one regular expression (test helper): llama.cpp is not installed where
the unit tests run, and our grammars are regular, so ``regex.fullmatch(pattern, text)`` says whether the grammar
lets a model write exactly ``text``, and ``partial=True`` whether ``text`` is a prefix of some allowed reply
(a runaway reply the grammar would have cut is not)."""
from __future__ import annotations

import re

_TOKEN = re.compile(r'\s*(?:(?P<lit>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])|(?P<name>[A-Za-z][\w-]*)'
                    r'|(?P<op>[()|*+?]))')


def _rules(grammar: str) -> dict[str, str]:
    rules: dict[str, str] = {}
    for line in grammar.splitlines():
        if "::=" in line and not line.lstrip().startswith("#"):
            name, _, body = line.partition("::=")
            rules[name.strip()] = body.strip()
    return rules


def _unescape(lit: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), lit[1:-1])


def to_regex(grammar: str, start: str = "root") -> str:
    rules = _rules(grammar)
    done: dict[str, str] = {}

    def rule(name: str, stack: tuple[str, ...]) -> str:
        if name in stack:
            raise ValueError(f"recursive rule {name}: not regular")
        if name not in done:
            done[name] = "(?:" + expr(rules[name], stack + (name,)) + ")"
        return done[name]

    def expr(body: str, stack: tuple[str, ...]) -> str:
        out, pos = [], 0
        while pos < len(body):
            m = _TOKEN.match(body, pos)
            if not m or m.end() == pos:
                if body[pos:].strip() == "":
                    break
                raise ValueError(f"cannot read {body[pos:pos + 20]!r}")
            pos = m.end()
            if m["lit"]:
                out.append("(?:" + re.escape(_unescape(m["lit"])) + ")")
            elif m["cls"]:
                out.append(m["cls"])  # GBNF classes and their escapes (\n \t \] \\ \^ \-) read the same in a regex
            elif m["name"]:
                out.append(rule(m["name"], stack))
            elif m["op"] in "*+?":
                out.append(m["op"])
            elif m["op"] == "(":
                out.append("(?:")
            else:
                out.append(m["op"])
        return "".join(out)

    return rule(start, ())
