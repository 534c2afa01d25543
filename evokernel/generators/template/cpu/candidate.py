"""The cpu back end's candidate file for a :class:`~..front.lower.Plan` under a schedule (a dict of knobs).

Each stage becomes one ``extern "C"`` function ``stage<k>``, written by its family's module (the table in
:mod:`.families`: row, gemm, gemv, conv, pool, scan, midreduce, groupnorm, layout; knobs in :mod:`.schedules`);
``ModelNew.forward`` allocates every materialised tensor with ``torch.empty`` and calls the stages in order. Sizes
are passed to the native code as runtime arguments (the kernels are not specialised to the task's sizes), scalar
constants of the reference (slopes, eps, scales) are literals. Only the prelude helpers (:mod:`.prelude`) the
kernels use are included.

Epilogues (elementwise chains fused after an anchor) are row programs over segments of the anchor's
output rows, applied while the tile is cache-hot.
"""
from __future__ import annotations

import re
from typing import Any

from evokernel.generators.template.cpu.families import FAMILIES
from evokernel.generators.template.cpu.prelude import prelude
from evokernel.generators.template.cpu.stage import StageCode
from evokernel.generators.template.front.graph import AnalysisError, attr_expr
from evokernel.generators.template.front.lower import Plan, Stage
from evokernel.generators.template.front.trace import INIT_TRIMASK


def stage_code(plan: Plan, knobs: dict[str, Any], k: int, st: Stage) -> StageCode:
    """Stage ``k``'s C++ and call, by its family's writer (:mod:`.families`)."""
    family = FAMILIES.get(st.family)
    if family is None:
        raise AnalysisError(f"no code generator for family {st.family}")
    return family.Writer(plan, knobs).render(k, st)


# ----------------------------------------------------------------------------------- candidate

# torch.tril/triu of a tensor the constructor builds (front/trace.py: _native_trimasks), in place: every (rows, cols)
# matrix of x keeps the elements on the kept side of the diagonal and zeroes the others
_INIT_TRIMASK_CPP = f"""extern "C" void {INIT_TRIMASK}(float* x, int64_t rows, int64_t cols, int64_t numel,
                                int64_t diagonal, int64_t upper) {{
    const int64_t mats = rows * cols > 0 ? numel / (rows * cols) : 0;
    for (int64_t b = 0; b < mats; ++b)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) {{
                const bool keep = upper ? (j - i >= diagonal) : (j - i <= diagonal);
                if (!keep) x[(b * rows + i) * cols + j] = 0.0f;
            }}
}}
"""


def render_candidate(plan: Plan, knobs: dict[str, Any], header: str, eval_plan: Plan | None = None) -> str:
    """The full candidate file: C++ source, ``load_cpp``, ``ModelNew``. ``eval_plan``: the plan of the model in eval
    mode where its forward differs there (a norm's running statistics, a dropout): a second library and a forward
    that takes its path when ``not self.training``."""
    cpp, init, args, fwd = _parts(plan, knobs)
    imports = "import math\n" if re.search(r"\bmath\.", init) else ""  # a constant of __init__ (1 / math.sqrt(d))
    eval_lib = eval_fwd = ""
    if eval_plan is not None:
        cpp_e, init_e, args_e, fwd_e = _parts(eval_plan, knobs)
        if (cpp_e, fwd_e) != (cpp, fwd):
            if (init_e, args_e) != (init, args):
                raise AnalysisError("the model builds other layers in eval mode")
            eval_lib = f'''
# eval mode (model.eval()): a norm reads its running statistics, a dropout is the identity
CPP_SOURCE_EVAL = r"""
{cpp_e}
"""

lib_eval = load_cpp(CPP_SOURCE_EVAL)
'''
            body = "\n".join("    " + ln for ln in fwd_e.splitlines()).replace(" lib.", " lib_eval.")
            eval_fwd = f"        if not self.training:\n{body}\n"
    return f'''"""{header}"""
{imports}import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
{cpp}
"""

lib = load_cpp(CPP_SOURCE)
{eval_lib}

class ModelNew(nn.Module):
{init}

    def forward(self, {args}):
{eval_fwd}{fwd}
'''


def _parts(plan: Plan, knobs: dict[str, Any]) -> tuple[str, str, str, str]:
    """(C++ source, ``__init__`` indented, forward's arguments, forward's body indented) of ``plan``."""
    g = plan.graph
    codes = [stage_code(plan, knobs, k, st) for k, st in enumerate(plan.stages)]
    # polynomial math only changes code that evaluates transcendental functions on vectors
    transcendental = {"exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu", "gelu_tanh", "elu", "softplus",
                      "log1p", "mish", "selu", "logsigmoid"}
    uses = any(g.nodes[i].op == "unary" and g.nodes[i].attrs["fn"] in transcendental
               for st in plan.stages for i in st.nodes)
    fast = knobs.get("math", "libm") == "fast" and int(knobs.get("vec", 1)) > 1 and uses
    body = "\n".join(c.cpp for c in codes)
    if f"lib.{INIT_TRIMASK}(" in (g.init_source or ""):
        body += "\n" + _INIT_TRIMASK_CPP
    cpp = prelude(fast, uses=body) + "\n" + body  # only the helpers the kernel uses: a trace a prompt can show whole
    lines = _forward_lines(plan, codes)
    init = g.init_source or "def __init__(self):\n    super().__init__()"
    init = "\n".join("    " + ln for ln in init.splitlines())
    args = ", ".join(g.input_names)
    fwd = "\n".join("        " + ln for ln in lines)
    return cpp, init, args, fwd


def _forward_lines(plan: Plan, codes: list[StageCode]) -> list[str]:
    """ModelNew.forward's body: shape checks of the inputs, the parameters a stage reads, a ``torch.empty`` per
    stage output and the call of its native function, views as aliases."""
    g = plan.graph
    lines: list[str] = []
    var: dict[int, str] = {}
    def add_aliases(src_id: int) -> None:
        for al, src in plan.aliases.items():
            if src == src_id and al not in var:
                var[al] = f"t{al}"
                lines.append(f"t{al} = {var[src_id]}.view({tuple(g.nodes[al].shape)!r})")

    for n in g.nodes:
        if n.op == "input":
            var[n.id] = n.attrs["name"]
            nm = n.attrs["name"]
            lines.append(f"if tuple({nm}.shape) != {tuple(n.shape)!r}:")
            lines.append(f"    raise ValueError('this kernel was generated for {nm} of shape {tuple(n.shape)}, got ' + str(tuple({nm}.shape)))")
            lines.append(f"{nm} = {nm}.contiguous()")
            add_aliases(n.id)
    # parameters a stage reads, directly or through a view (a reshaped weight)
    read = {plan.aliases.get(a, a) for st in plan.stages for i in ([st.anchor] if st.anchor is not None else []) + st.nodes
            for a in g.nodes[i].args if isinstance(a, int)}
    used_params = {a for a in read if g.nodes[a].op == "param"}
    for pid in sorted(used_params):
        n = g.nodes[pid]
        var[pid] = f"w{pid}"
        lines.append(f"w{pid} = {attr_expr('self', n.attrs['path'])}.contiguous()")
        add_aliases(pid)
    for k, (st, code) in enumerate(zip(plan.stages, codes)):
        shape = g.nodes[st.out].shape
        name = f"t{st.out}"
        dtype = "torch.int64" if g.nodes[st.out].dtype == "i64" else "torch.float32"
        lines.append(f"{name} = torch.empty({tuple(shape)!r}, dtype={dtype})")
        args = []
        for a in code.args:
            if a == "out":
                args.append(name)
            elif a.startswith("p") and a[1:].isdigit():
                src = var.get(int(a[1:]))
                if src is None:
                    raise AnalysisError(f"stage {k} reads node {a[1:]} before it is computed")
                args.append(src)
            else:
                args.append(a)
        lines.append(f"lib.{code.name}({', '.join(args)})")
        var[st.out] = name
        add_aliases(st.out)
    out = g.output
    if out not in var:
        raise AnalysisError("the output is not computed by any stage")
    lines.append(f"return {var[out]}")
    return lines
