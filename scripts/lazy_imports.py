"""Function-level imports without a reason: each import inside a function must say why it is there, with a
``# lazy: REASON`` comment on its line or on a comment line heading its group of imports (a run of import lines
without a blank line between them). Imports inside functions hide edges from a reader (import-linter sees them);
the reason is usually start-up time (torch, ray, the verifier) or an edge kept on purpose.

    python scripts/lazy_imports.py FILE...     # prints FILE:LINE: import ...; exits 1 when any lacks a reason
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path


def unexplained(path: Path) -> list[tuple[int, str]]:
    src = path.read_text()
    lines = src.splitlines()
    found: dict[int, str] = {}
    for fn in ast.walk(ast.parse(src)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            own = "\n".join(lines[node.lineno - 1:node.end_lineno])
            if "# lazy:" in own:
                continue
            i = node.lineno - 2  # walk up the group: imports, their continuation lines, comments
            explained = False
            while i >= 0 and lines[i].strip():
                text = lines[i].strip()
                if text.startswith("# lazy:") or " # lazy:" in lines[i]:
                    explained = True
                    break
                if not (text.startswith(("import ", "from ", "#", ")")) or text.endswith(",")):
                    break
                i -= 1
            if not explained:
                found[node.lineno] = lines[node.lineno - 1].strip()
    return sorted(found.items())


def main(argv: list[str]) -> int:
    bad = 0
    for name in argv:
        for line, text in unexplained(Path(name)):
            print(f"{name}:{line}: {text}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
