"""Reading what a binding function does with its arguments (pure Python, no torch).

A binding (python_bind_src) is a C++ function like

    at::Tensor layer_norm_custom_impl_npu(const at::Tensor& x, double eps) {
        at::Tensor y = at::empty_like(x);
        EXEC_NPU_CMD(aclnnLayerNormCustom, x, eps, y);
        return y;
    }

`plan_call` walks its statements with the actual argument shapes and dtypes and returns which tensors
go in as inputs, which are allocated as outputs (shape, dtype, zero-filled or not), which values are
attributes, and what is returned. Supported: declarations and assignments of tensors, integers,
floats and shape lists; `at::empty_like/zeros_like/empty/zeros/ones/full` (shape from a `{...}` list,
`x.sizes()`, or a list variable), `.contiguous()`, `x.size(i)`, `x.sizes()[i]`, `x.dim()`,
`x.numel()`, `x.options()` with `.dtype(...)`, `static_cast<T>(...)`, integer arithmetic,
`v.push_back(e)`, `v[i] = e`, `i++`/`++i`, `for (init; cond; step)` loops (at most 10,000 iterations),
`if`/`else if`/`else`, `std::max`/`std::min`, `TORCH_CHECK` (skipped), `EXEC_NPU_CMD`, `return`.
Anything else is a clear error naming the statement.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .project import Binding, ProjectError, split_args


@dataclass
class TensorInfo:
    shape: tuple[int, ...]
    dtype: str  # torch dtype name
    arg: int | None = None  # index of the binding argument it came from (inputs)
    alloc: int | None = None  # index into CallPlan.allocs (outputs)

    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass
class Options:
    dtype: str | None = None


@dataclass
class Alloc:
    shape: tuple[int, ...]
    dtype: str
    fill: float | None  # None: uninitialised (at::empty*), else the fill value


@dataclass
class CallPlan:
    aclnn: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    attrs: list[Any]  # in EXEC_NPU_CMD order: bool, int, float, str or list values
    allocs: list[Alloc] = field(default_factory=list)
    returns: list[TensorInfo] = field(default_factory=list)


_DTYPE_NAMES = {
    "kFloat": "float32", "kFloat32": "float32", "kHalf": "float16", "kFloat16": "float16", "kBFloat16": "bfloat16",
    "kInt": "int32", "kInt32": "int32", "kLong": "int64", "kInt64": "int64", "kShort": "int16", "kInt16": "int16",
    "kChar": "int8", "kInt8": "int8", "kByte": "uint8", "kUInt8": "uint8", "kBool": "bool",
    "Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Int": "int32", "Long": "int64", "Bool": "bool",
}

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+\.\d*(?:[eE][+-]?\d+)?[fF]?|\d*\.\d+(?:[eE][+-]?\d+)?[fF]?|\d+[eE][+-]?\d+[fF]?"
                    r"|0[xX][0-9a-fA-F]+|\d+)(?:[uUlL]*)|(?P<name>[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)"
                    r"|(?P<op>->|::|<<|>>|&&|\|\||==|!=|<=|>=|[-+*/%(){}\[\],.<>?:!&]))")


class _Parser:
    def __init__(self, text: str, env: dict[str, Any], where: str):
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ProjectError(f"{where}: cannot read `{text}` near `{text[pos:pos + 20]}`")
            kind = m.lastgroup or "op"
            tok = m.group(kind)
            if kind == "name":
                tok = re.sub(r"\s+", "", tok)
            self.toks.append((kind, tok))
            pos = m.end()
        self.i = 0
        self.env, self.where, self.text = env, where, text

    def fail(self, why: str) -> ProjectError:
        return ProjectError(f"{self.where}: {why} in `{self.text}`")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, tok: str | None = None) -> tuple[str, str]:
        t = self.peek()
        if t is None or (tok is not None and t[1] != tok):
            raise self.fail(f"expected `{tok}`" if tok else "unexpected end")
        self.i += 1
        return t

    def parse(self) -> Any:
        v = self.expr()
        if self.peek() is not None:
            raise self.fail(f"unexpected `{self.peek()[1]}`")
        return v

    def expr(self) -> Any:
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return a if cond else b
        return cond

    _PREC = [("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%")]

    def binary(self, level: int) -> Any:
        if level == len(self._PREC):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            t = self.peek()
            op = t[1] if t else None
            if t is None or t[0] != "op" or op not in self._PREC[level]:
                return left
            self.i += 1
            right = self.binary(level + 1)
            left = _apply(op, left, right, self)

    def unary(self) -> Any:
        t = self.peek()
        if t == ("op", "-"):
            self.take()
            return -self.unary()
        if t == ("op", "+"):
            self.take()
            return self.unary()
        if t == ("op", "!"):
            self.take()
            return not self.unary()
        return self.postfix(self.primary())

    def args(self, close: str = ")") -> list[Any]:
        out = []
        if self.peek() == ("op", close):
            self.take(close)
            return out
        while True:
            out.append(self.expr())
            t = self.take()
            if t[1] == close:
                return out
            if t[1] != ",":
                raise self.fail(f"expected `,` or `{close}`")

    def primary(self) -> Any:
        kind, tok = self.take()
        if kind == "num":
            raw = tok.rstrip("fF")
            return int(raw, 0) if re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", raw) else float(raw)
        if tok == "(":
            v = self.expr()
            self.take(")")
            return v
        if tok == "{":
            return self.args("}")
        if kind != "name":
            raise self.fail(f"unexpected `{tok}`")
        base = tok.split("::")[-1]
        if base in ("true", "false"):
            return base == "true"
        if base in ("static_cast", "reinterpret_cast") or (base == "vector" and self.peek() == ("op", "<")):
            self._skip_template()
            if self.peek() == ("op", "{"):
                self.take("{")
                return self.args("}")
            self.take("(")
            v = self.args(")")
            return v[0] if base != "vector" else v
        if base in _DTYPE_NAMES and self.peek() != ("op", "("):
            return ("dtype", _DTYPE_NAMES[base])
        if self.peek() == ("op", "("):
            self.take("(")
            return _call(base, tok, self.args(")"), self)
        if base in ("TensorOptions",):
            return Options()
        if tok in self.env:
            return self.env[tok]
        raise self.fail(f"unknown name `{tok}`")

    def _skip_template(self) -> None:
        self.take("<")
        depth = 1
        while depth:
            t = self.take()
            depth += {"<": 1, ">": -1}.get(t[1], 0)

    def postfix(self, v: Any) -> Any:
        while True:
            t = self.peek()
            if t == ("op", "."):
                self.take()
                name = self.take()[1]
                args = self.args(")") if self.peek() == ("op", "(") and self.take("(") else None
                v = _method(v, name, args, self)
            elif t == ("op", "["):
                self.take("[")
                idx = self.expr()
                self.take("]")
                try:
                    v = v[idx]
                except (TypeError, IndexError, KeyError):
                    raise self.fail(f"index {idx!r} out of range") from None
            else:
                return v


def _apply(op: str, a: Any, b: Any, p: _Parser) -> Any:
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if isinstance(a, int) and isinstance(b, int):
                return int(a / b)  # C++ integer division truncates
            return a / b
        if op == "%":
            return int(math.fmod(a, b))
        return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b,
                "<=": lambda: a <= b, ">=": lambda: a >= b, "&&": lambda: bool(a and b),
                "||": lambda: bool(a or b)}[op]()
    except (TypeError, ZeroDivisionError):
        raise p.fail(f"cannot compute {a!r} {op} {b!r}") from None


def _shape_of(v: Any, p: _Parser) -> tuple[int, ...]:
    if isinstance(v, TensorInfo):
        return v.shape
    if isinstance(v, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in v):
        if any(d < 0 for d in v):
            raise p.fail(f"negative size in {list(v)}")
        return tuple(v)
    raise p.fail(f"expected a shape (a {{...}} list of sizes or x.sizes()), got {v!r}")


def _dtype_from(args: list[Any], default: str) -> str:
    for a in args:
        if isinstance(a, Options) and a.dtype:
            return a.dtype
        if isinstance(a, tuple) and len(a) == 2 and a[0] == "dtype":
            return a[1]
    return default


def _call(base: str, full: str, args: list[Any], p: _Parser) -> Any:
    allocs: list[Alloc] = p.env["__allocs__"]
    if base in ("empty_like", "zeros_like", "ones_like", "full_like"):
        if not args or not isinstance(args[0], TensorInfo):
            raise p.fail(f"{base} needs a tensor")
        fill = {"empty_like": None, "zeros_like": 0.0, "ones_like": 1.0}.get(base)
        if base == "full_like":
            fill = float(args[1])
        dtype = _dtype_from(args[1:], args[0].dtype)
        allocs.append(Alloc(args[0].shape, dtype, fill))
        return TensorInfo(args[0].shape, dtype, alloc=len(allocs) - 1)
    if base in ("empty", "zeros", "ones", "full"):
        if not args:
            raise p.fail(f"{base} needs a shape")
        shape = _shape_of(args[0], p)
        fill = {"empty": None, "zeros": 0.0, "ones": 1.0}.get(base)
        rest = args[1:]
        if base == "full":
            fill, rest = float(args[1]), args[2:]
        dtype = _dtype_from(rest, "float32")
        allocs.append(Alloc(shape, dtype, fill))
        return TensorInfo(shape, dtype, alloc=len(allocs) - 1)
    if base in ("make_tuple", "tie", "forward_as_tuple"):
        return list(args)
    if base in ("max", "min") and len(args) == 2:
        return max(args) if base == "max" else min(args)
    if base in ("IntArrayRef", "SmallVector", "int64_t", "int32_t", "int", "size_t", "uint32_t"):
        return args[0] if len(args) == 1 else list(args)
    if base in ("double", "float"):
        return float(args[0])
    raise p.fail(f"unsupported function `{full}`")


def _method(v: Any, name: str, args: list[Any] | None, p: _Parser) -> Any:
    if isinstance(v, TensorInfo):
        if name == "size" and args is not None and len(args) == 1:
            d = args[0] + len(v.shape) if args[0] < 0 else args[0]
            if not 0 <= d < len(v.shape):
                raise p.fail(f"size({args[0]}) of a {len(v.shape)}-d tensor")
            return v.shape[d]
        if name in ("sizes", "shape"):
            return list(v.shape)
        if name in ("dim", "ndimension"):
            return len(v.shape)
        if name == "numel":
            return v.numel()
        if name == "options":
            return Options(v.dtype)
        if name in ("scalar_type", "dtype"):
            return ("dtype", v.dtype)
        if name in ("contiguous", "detach"):
            return v
        if name in ("is_contiguous", "defined"):
            return True
        raise p.fail(f"unsupported tensor method `.{name}()`")
    if isinstance(v, Options):
        if name == "dtype" and args:
            d = args[0]
            return Options(d[1] if isinstance(d, tuple) else v.dtype)
        if name in ("device", "layout", "requires_grad", "memory_format"):
            return v
        raise p.fail(f"unsupported options method `.{name}()`")
    if isinstance(v, list):
        if name == "vec":
            return list(v)
        if name == "size":
            return len(v)
        if name == "push_back" and args is not None:
            v.append(args[0])
            return None
        if name == "pop_back":
            v.pop()
            return None
        if name in ("back", "front"):
            return v[-1] if name == "back" else v[0]
        raise p.fail(f"unsupported list method `.{name}()`")
    raise p.fail(f"`.{name}` on {type(v).__name__}")


_DECL = re.compile(r"^(?P<type>(?:const\s+)?[A-Za-z_][\w:]*(?:\s*<[^=;]*>)?(?:\s*[&*])?)\s+(?P<name>[A-Za-z_]\w*)\s*"
                   r"(?:=\s*(?P<expr>.+)|(?P<brace>\{.*\})|\((?P<ctor>.*)\))?$", re.S)
_ASSIGN = re.compile(r"^(?P<target>[A-Za-z_]\w*(?:\s*\[[^\]]+\])?)\s*(?P<op>[-+*/]?=)\s*(?P<expr>.+)$", re.S)


def plan_call(binding: Binding, args: list[Any], where: str = "python_bind_src") -> CallPlan:
    """Run the binding's statements symbolically for these arguments (TensorInfo for tensors)."""
    if len(args) != len(binding.params):
        raise ProjectError(f"{binding.cpp_name}() takes {len(binding.params)} argument(s), got {len(args)}")
    env: dict[str, Any] = {"__allocs__": []}
    for i, ((kind, name), a) in enumerate(zip(binding.params, args)):
        if kind == "tensor":
            if not isinstance(a, TensorInfo):
                raise ProjectError(f"{binding.cpp_name}(): argument {i + 1} ({name}) must be a tensor")
            a.arg = i
        elif kind == "list":
            if not isinstance(a, (list, tuple)):
                raise ProjectError(f"{binding.cpp_name}(): argument {i + 1} ({name}) must be a list of ints")
            a = list(a)
        elif kind == "string":
            if not isinstance(a, str):
                raise ProjectError(f"{binding.cpp_name}(): argument {i + 1} ({name}) must be a string")
        elif isinstance(a, TensorInfo):
            raise ProjectError(f"{binding.cpp_name}(): argument {i + 1} ({name}) must be a number, got a tensor")
        elif isinstance(a, str):
            raise ProjectError(f"{binding.cpp_name}(): argument {i + 1} ({name}) must be a number, got a string")
        env[name] = a
    state: dict[str, Any] = {"exec_args": None, "aclnn": "", "returns": []}
    _run(binding.body, env, state, binding.cpp_name, where)
    exec_args, aclnn, returns = state["exec_args"], state["aclnn"], state["returns"]
    if exec_args is None:
        raise ProjectError(f"{where} ({binding.cpp_name}): no EXEC_NPU_CMD call before the return")
    allocs: list[Alloc] = env["__allocs__"]
    inputs, outputs, attrs = [], [], []
    for a in exec_args:
        if isinstance(a, TensorInfo):
            (outputs if a.alloc is not None else inputs).append(a)
        elif isinstance(a, (bool, int, float, str)) or (
                isinstance(a, list) and all(isinstance(x, (int, float)) for x in a)):
            attrs.append(a)  # a str: a string attribute (a std::string parameter passed through)
        else:
            raise ProjectError(f"{where} ({binding.cpp_name}): EXEC_NPU_CMD argument {a!r} is neither a tensor nor "
                               "a number")
    if not outputs:
        raise ProjectError(f"{where} ({binding.cpp_name}): EXEC_NPU_CMD gets no output tensor allocated in the "
                           "binding (allocate it with at::empty_like(x) or at::empty({...}, x.options()))")
    if not returns:
        raise ProjectError(f"{where} ({binding.cpp_name}): the function returns nothing; return the output tensor")
    return CallPlan(aclnn, inputs, outputs, attrs, allocs, returns)


_MAX_LOOP = 10_000  # iterations of one binding loop (shape loops run over a tensor's dims)
_FOR = re.compile(r"^for\s*\((?P<init>[^;]*);(?P<cond>[^;]*);(?P<step>[^)]*)\)\s*(?P<body>.*)$", re.S)
_IF = re.compile(r"^if\s*\((?P<cond>.*)$", re.S)
_STEP = re.compile(r"^(?:(?:\+\+|--)\s*(?P<pre>[A-Za-z_]\w*)|(?P<post>[A-Za-z_]\w*)\s*(?:\+\+|--))$")


def _block(text: str) -> list[str]:
    """The statements of a block body: `{ a; b; }` or a single statement."""
    from .project import _statements

    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return [x.strip() for x in _statements(text) if x.strip()]


def _paren_end(s: str, start: int) -> int:
    """Index just past the parenthesis closing the one at s[start]."""
    depth = 0
    for i in range(start, len(s)):
        depth += {"(": 1, ")": -1}.get(s[i], 0)
        if depth == 0:
            return i + 1
    return -1


def _split_else(rest: str) -> tuple[str, str | None]:
    """`{...} else ...` or `stmt else ...` -> (then part, else part or None)."""
    rest = rest.strip()
    if rest.startswith("{"):
        depth = 0
        for i, ch in enumerate(rest):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0:
                tail = rest[i + 1:].strip()
                return rest[:i + 1], (tail[4:].strip() if re.match(r"else\b", tail) else None)
    m = re.search(r"\belse\b", rest)
    return (rest[:m.start()], rest[m.end():].strip()) if m else (rest, None)


def _run(stmts: list[str], env: dict[str, Any], state: dict[str, Any], cpp_name: str, where: str) -> bool:
    """Execute statements; True once a `return` ran."""
    for stmt in stmts:
        s = " ".join(stmt.split())
        loc = f"{where} ({cpp_name}): statement `{s[:120]}`"
        if s.startswith(("TORCH_CHECK", "AT_ASSERT", "TORCH_INTERNAL_ASSERT")):
            continue  # checks: the reference's inputs satisfy them; an unreadable check must not block
        m = _FOR.match(s)
        if m:
            if m.group("init").strip():
                _run([m.group("init")], env, state, cpp_name, where)
            body = _block(m.group("body"))
            for n in range(_MAX_LOOP + 1):
                if n == _MAX_LOOP:
                    raise ProjectError(f"{loc}: the loop runs more than {_MAX_LOOP} times")
                if m.group("cond").strip() and not _Parser(m.group("cond"), env, loc).parse():
                    break
                if _run(body, env, state, cpp_name, where):
                    return True
                if m.group("step").strip():
                    _run([m.group("step")], env, state, cpp_name, where)
            continue
        if _IF.match(s):
            end = _paren_end(s, s.index("("))
            if end < 0:
                raise ProjectError(f"{loc}: unbalanced parentheses")
            then, other = _split_else(s[end:])
            branch = _block(then) if _Parser(s[s.index("(") + 1:end - 1], env, loc).parse() else \
                ([other] if other and other.startswith("if") else _block(other) if other else [])
            if _run(branch, env, state, cpp_name, where):
                return True
            continue
        m = _STEP.match(s)
        if m:
            name = m.group("pre") or m.group("post")
            if not isinstance(env.get(name), int):
                raise ProjectError(f"{loc}: `{name}` is not an integer")
            env[name] += 1 if "++" in s else -1
            continue
        m = re.match(r"^EXEC_NPU_CMD\s*\((.*)\)$", s, re.S)
        if m:
            parts = split_args(m.group(1))
            if not parts or not parts[0].startswith("aclnn"):
                raise ProjectError(f"{loc}: the first argument of EXEC_NPU_CMD must be the aclnn<Op> name")
            state["aclnn"] = parts[0]
            state["exec_args"] = [_Parser(x, env, loc).parse() for x in parts[1:]]
            continue
        if s.startswith("return"):
            v = _Parser(s[len("return"):], env, loc).parse() if s[len("return"):].strip() else None
            vals = v if isinstance(v, list) else [v]
            if not all(isinstance(x, TensorInfo) for x in vals):
                raise ProjectError(f"{loc}: the binding must return a tensor (or a list/tuple of tensors)")
            state["returns"] = vals
            return True
        m = _ASSIGN.match(s)
        if m and m.group("target").split("[")[0] in env:
            target, op = m.group("target"), m.group("op")
            value = _Parser(m.group("expr"), env, loc).parse()
            if "[" in target:
                name, idx = target.split("[", 1)
                container = env[name.strip()]
                i = _Parser(idx.rstrip("]"), env, loc).parse()
                if not isinstance(container, list) or not isinstance(i, int) or not -len(container) <= i < len(container):
                    raise ProjectError(f"{loc}: bad index assignment")
                container[i] = value if op == "=" else _apply(op[0], container[i], value, _Parser("0", env, loc))
            else:
                env[target] = value if op == "=" else _apply(op[0], env[target], value, _Parser("0", env, loc))
            continue
        m = _DECL.match(s)
        if m and not s.startswith("return"):
            expr = m.group("expr") or m.group("brace") or m.group("ctor")
            if expr is None:
                env[m.group("name")] = [] if "vector" in m.group("type") else 0
            else:
                value = _Parser(expr, env, loc).parse()
                if isinstance(value, list):
                    value = list(value)  # a declared vector is a copy
                env[m.group("name")] = value
            continue
        m = re.match(r"^([A-Za-z_]\w*)\s*\.\s*(push_back|pop_back|emplace_back)\s*\((.*)\)$", s, re.S)
        if m and m.group(1) in env:
            _Parser(f"{m.group(1)}.{m.group(2).replace('emplace_back', 'push_back')}({m.group(3)})", env, loc).parse()
            continue
        raise ProjectError(f"{loc}: not supported by the emulator's binding reader. Keep the binding to output "
                           "allocation (at::empty_like / at::empty({...}, x.options())), EXEC_NPU_CMD and return")
    return False
