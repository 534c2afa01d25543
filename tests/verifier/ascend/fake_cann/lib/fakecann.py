"""Shared helpers of the fake CANN tools (tests only). See ../README.md."""
import json
import os
import re
import sys
import time

ENV_KEYS = ("ASCEND_CUSTOM_OPP_PATH", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_TOOLKIT_HOME",
            "LD_LIBRARY_PATH", "FAKE_CANN_SCENARIO")
SCENARIOS = ("success", "compile_error", "opbuild_fail", "tbe_error", "missing_run", "runtime_fault", "timeout",
             "op_not_found", "nested_profile", "garbled_profile")


def scenario() -> str:
    s = os.environ.get("FAKE_CANN_SCENARIO", "success")
    if s not in SCENARIOS:
        sys.exit(f"fake cann: unknown FAKE_CANN_SCENARIO {s!r} (one of {', '.join(SCENARIOS)})")
    return s


def log(tool: str, **extra) -> None:
    path = os.environ.get("FAKE_CANN_LOG")
    if not path:
        return
    rec = {"tool": tool, "argv": sys.argv[1:], "cwd": os.getcwd(), "time": time.time(),
           "env": {k: os.environ.get(k) for k in ENV_KEYS}, **extra}
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def pascal_to_snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def first_unbalanced(src: str):
    """(line, col, message) of the first bracket problem in C++-ish text (comments/strings skipped), or None."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    i, line, col, n = 0, 1, 1, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            seg = src[i:n if j < 0 else j + 2]
            line += seg.count("\n")
            i = n if j < 0 else j + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            col += j + 1 - i
            i = j + 1
            continue
        if c in "([{":
            stack.append((c, line, col))
        elif c in ")]}":
            if not stack or stack[-1][0] != pairs[c]:
                return line, col, f"extraneous closing '{c}'"
            stack.pop()
        if c == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    if stack:
        c, ln, cl = stack[-1]
        close = {"(": ")", "[": "]", "{": "}"}[c]
        return ln, cl, f"expected '{close}' to match this '{c}'"
    return None
