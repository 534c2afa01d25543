"""Gates 2-4 for backends whose candidates run in the sandboxed worker (cpu, ascend-sim).

    compile (native builds while the candidate module is imported) -> construction -> correctness
    trials (with the dynamic anti-hack checks on every trial) -> latency (measured by the timing
    protocol, or modelled by the backend)

Each trial: the reference makes inputs from a secret seed (some perturbed) and computes the expected
outputs; the candidate gets its own copy, runs ``forward`` recorded, and hands back its outputs and its
inputs after the call; the parent compares everything itself.

No trial is ever skipped. A reference output holding NaN/Inf is drawn again from fresh secret seeds (up to
`REDRAWS` times); if it stays non-finite (a task that yields NaN/Inf by design: the log of negatives, a norm
that is 0, a fully masked softmax row) the trial is judged with those positions matched element by element
and masked out of the finite rules (`correctness`). After the ordinary trials both models are built again
with their constant initialisers drawn at random, weights of both signs (`sandboxed.init_perturbation`), for two more
trials (on the `special` inputs of `sandboxed.trial_inputs`, integer inputs planted by `sandboxed.integer_inputs`: a
constant row shows a norm's bias; and on its `distinct` inputs,
where integer and bool outputs are compared exactly: an argmax of a norm's output shows a skipped affine), and the
timing uses those models: a task that is degenerate under its default parameters (a mean of a normalised
tensor is 0; weight 1 and bias 0 can be hard-coded) is judged where skipped work shows, and a kernel that
special-cases the defaults gains no speed from it. ``details["trials"]`` says what happened.
"""
from __future__ import annotations

import ast
import hashlib

import random
import time
from typing import Any, Callable

import torch

from evokernel.tasks.task import Task, TaskError
from evokernel.verifier.message_codec import DTYPES, ProtocolError, TensorMeta
from evokernel.verifier.sandboxed.trial_inputs import LARGE_IN, large_max, planted_level
from evokernel.verifier.trusted import compile_baseline, correctness, latency, model_state, regions, timing_protocol
from evokernel.verifier.trusted.failures import INPUTS_MODIFIED, MOVEMENT_PREFIX, Fail, init_compute_fail, torch_ops_fail
from evokernel.verifier.trusted.launcher import WorkerHandle
from evokernel.verifier.trusted.reference import Reference

REDRAWS = 3  # fresh secret seeds tried when a trial's reference output holds NaN/Inf
PERTURBED_PARAMETERS = ("both models were built again with their constant initialisers drawn at random (a norm's "
                        "weight in +-[0.5, 1.5], of either sign, bias in [-0.5, 0.5], running mean in [-0.5, 0.5] "
                        "and variance in [0.5, 1.5]; the same values "
                        "on both sides when ModelNew builds the same layers in the same order as Model): the kernel "
                        "must read every parameter and buffer, not assume its default value")
RELOADED = ("Before it, after the trial before, every floating parameter of both models was negated in place (new "
            "values in the same storage, as load_state_dict or an optimizer step writes them): a kernel must read its "
            "parameters on every call, not a copy made on an earlier one.")
# the inputs of the perturbed-parameter trials: a constant row's LayerNorm is the bias, 0 under default parameters
# ("special"); an integer output (argmax of a LayerNorm) is compared only where no planted values tie ("distinct")
PARAMETER_TRIAL_INPUTS = ("special", "distinct")
SPECIAL_INPUTS = ("the inputs held values random draws almost never give: a few exact +0.0 and -0.0, large finite "
                  "values (|x| from 1e2 up to 1e10 in float32/bfloat16, 1e75 in float64, none in float16), tiny "
                  "ones (|x| from the dtype's smallest normal up to 1e-4), a few subnormals where flushing them to 0 "
                  "does not change PyTorch's answer, constant rows (a row of the last dimension repeating one "
                  "value: variance 0), and rows of other structure: about half exact zeros, integers (|x| < 100), "
                  "magnitudes in [0, 1] with a 1, and one row of zeros; integer inputs held their drawn minimum and maximum and, where the reference "
                  "accepts them, -1, -100 (cross entropy's ignore_index), -(max + 1), negative indices -2 .. -max "
                  "and large magnitudes of both signs, one per row (int64: 2^31 to 2^52, int32: 2^16 to 2^29); "
                  "bool inputs held all-False and all-True rows where the reference accepts them; forward's Python "
                  "float arguments held other values than get_inputs()'s (the magnitude times 1/4 to 4, where the "
                  "reference accepts it); the kernel must give PyTorch's answer there too")
DISTINCT_INPUTS = ("the inputs held values random draws almost never give, with no ties: a few exact +0.0 and -0.0, "
                   "large finite values (|x| from 1e2 up to 1e10 in float32/bfloat16, none in float16, 1e75 in "
                   "float64; the first of them negative) and tiny ones (|x| from the dtype's smallest normal up to "
                   "1e-4); integer inputs held, where the reference accepts them, -1, -100 (cross entropy's "
                   "ignore_index), -(max + 1), negative indices -2 .. -max and large magnitudes of both signs, one "
                   "per row (int64: 2^31 to 2^52, int32: 2^16 to 2^29), and bool inputs all-False and all-True rows; "
                   "forward's Python float arguments held other values than get_inputs()'s (the sign flipped, the "
                   "magnitude times 1/4 to 4, where the reference accepts it); the kernel must give PyTorch's answer "
                   "there too, integer and bool outputs included")
_VIEWS = ("passed to both models as non-contiguous views with the same values where the reference accepts them "
          "({}); the kernel must read an input through its strides, or make it contiguous first (x.contiguous())")
STRIDED_INPUTS = {  # sandboxed/trial_inputs.py STRIDED_IN
    "scale": "the inputs were multiplied by 4, and the floating ones of two or more dimensions " + _VIEWS.format(
        "a transposed copy's transpose: the last two dimensions swapped in memory, strides (..., 1, rows)"),
    "negate": "the inputs were negated, and the floating ones of two or more dimensions " + _VIEWS.format(
        "slices of a wider buffer: each row of the last dimension followed by unused elements, strides "
        "(..., n + pad, 1)"),
}
INPUT_NOTES = {"special": SPECIAL_INPUTS, "distinct": DISTINCT_INPUTS, **STRIDED_INPUTS}


def large_top(level: int) -> float:
    """The largest float32 magnitude planted at ``level`` (`trial_inputs.LARGE_LEVELS`)."""
    with planted_level(level):
        return large_max(torch.float32, 1)


RESOLVED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
NO_REDRAWS = ("nonfinite", "special", "distinct")  # NaN/Inf by construction (an input NaN, exp(1e8), 1/1e-30, log(0)):
# judged masked
# perturbations whose planted equal values (constant rows) make ties: an index output is not compared there
TIES = ("special",)


def nonfinite(expected: list[torch.Tensor]) -> int:
    """How many elements of the floating outputs are NaN or +-Inf."""
    return sum(int(e.numel() - int(torch.isfinite(e).sum())) for e in expected
               if e.is_floating_point() and not _all_finite(e))


def _all_finite(t: torch.Tensor) -> bool:
    """One sum decides nearly always (NaN and Inf propagate through it, so a finite sum means every element is
    finite; a sum that overflows is counted element by element): ~5x cheaper than materialising isfinite."""
    if t.numel() == 0 or bool(torch.isfinite(t.sum())):
        return True
    return bool(torch.isfinite(t).all())


def reference_trial(ref: Reference, rng: random.Random, seed: int, perturb: str, state: bool = False
                    ) -> tuple[int, list[TensorMeta], list[TensorMeta], float, dict[str, Any] | None]:
    """One trial's inputs and reference outputs: (the seed finally used, input metas, output metas, seconds of
    the reference's last forward, a note for ``details`` or None). A reference that holds NaN/Inf is drawn
    again from fresh secret seeds, up to `REDRAWS` times; if it stays non-finite it is judged as it is.
    ``state``: the run also reports the model's state (``ref.last_state``, `model_state`), and a run drawn again
    rewinds the state to before the discarded one (the candidate runs once, on the inputs kept)."""
    redraws = 0
    while True:
        in_metas = ref.make_inputs(seed, perturb)
        t0 = time.perf_counter()
        out_metas, _ = ref.run(state=state, rewind=state and redraws > 0)
        seconds = time.perf_counter() - t0
        bad = nonfinite([regions.tensor(ref.handle, m) for m in out_metas])
        if not bad or redraws == REDRAWS or perturb in NO_REDRAWS:
            break
        seed, redraws = rng.randrange(2**31), redraws + 1
    if not bad and not redraws:
        return seed, in_metas, out_metas, seconds, None
    total = sum(m.nbytes // DTYPES[m.dtype] for m in out_metas)
    return seed, in_metas, out_metas, seconds, {"redraws": redraws, "nonfinite_elements": bad, "elements": total}


def trial_plan(cfg: Any, rng: random.Random) -> list[tuple[str, str, int]]:
    """(label, perturbation, secret seed) per correctness trial."""
    plan = [("none", rng.randrange(2**31)) for _ in range(cfg.trials)]
    plan += [(p, rng.randrange(2**31)) for p in cfg.perturbations]
    return [(f"trial {i + 1}" + ("" if p == "none" else f" ({p} inputs)"), p, seed) for i, (p, seed) in enumerate(plan)]


DIGEST_MAX_BYTES = 256 << 20  # trials larger than this keep no digests (the traffic floor then counts every input)


def _digest(tensors: list[torch.Tensor]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def value_free_inputs(digests: list[tuple[list[str], str]]) -> list[int]:
    """The inputs whose values the reference's outputs do not depend on, as the trials show it: every trial's
    expected outputs are identical although these inputs' values differed between trials (an im2col index table,
    a zeros_like: the output is a function of shapes only). The traffic floor does not ask a kernel to read them
    (an honest kernel has no reason to). Inputs that never changed (integer inputs the perturbations leave alone,
    a task that seeds itself) stay counted; an output that changed keeps every input counted. The trials' inputs
    and expected outputs are the reference's own, so a candidate cannot make an input look value-free."""
    if len(digests) < 2 or len({out for _, out in digests}) != 1:
        return []
    n = min(len(ins) for ins, _ in digests)
    return [i for i in range(n) if len({ins[i] for ins, _ in digests}) > 1]


class Truth:
    """The reference's float64 outputs for one set of inputs, computed once and only if a reduction's tight
    comparison fails (see `correctness`)."""

    def __init__(self, compute: Callable[[], list[correctness.Exact]] | None):
        self.compute, self.value = compute, None

    def of(self, k: int) -> Callable[[], torch.Tensor] | None:
        if self.compute is None:
            return None

        def get() -> torch.Tensor:
            if self.value is None:
                self.value = self.compute()
            return self.value[k]

        return get


def reductions(expected: list[torch.Tensor], inputs_numel: int) -> list[bool]:
    return [correctness.is_reduction(e.numel(), inputs_numel) for e in expected]


def index_like(e: torch.Tensor) -> bool:
    """An output that may name one of several equal elements: integer, not bool (a mask, a comparison is a
    function of each value and has one answer however many values are equal)."""
    return not e.is_floating_point() and not e.is_complex() and e.dtype != torch.bool


def tied_index(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Under the ties rule (inputs with planted equal values), an index output of the right shape and dtype is not
    compared further: it may name any of several equal candidates (trials and the timing's value rounds alike)."""
    return index_like(expected) and got.shape == expected.shape and got.dtype == expected.dtype


def compare_outputs(label: str, got: list[torch.Tensor], expected: list[torch.Tensor], inputs: list[torch.Tensor],
                    tol: float, truth: Callable[[], list[correctness.Exact]] | None = None,
                    ties: bool = False) -> None:
    """Each output against the reference's, at the configured tolerance (correctness gate); reductions under
    the tight rule, with the float64 answer from ``truth`` as the second opinion. ``ties``: the inputs hold
    planted equal values (the special trial's constant rows), so an integer output (an index: argmax, top-k,
    nearest neighbours) may name any of several equal candidates: only its shape and dtype are judged there. Bool
    outputs are compared always, and integer ones exactly in every other trial (the ``distinct`` trials plant the
    same value classes without ties)."""
    exact = Truth(truth)
    flags = reductions(expected, sum(t.numel() for t in inputs))
    for k, (g, e) in enumerate(zip(got, expected)):
        if ties and tied_index(g, e):
            continue
        cmp = correctness.compare(g, e, inputs, tol, "output" if len(got) == 1 else f"output {k}",
                                  reduction=flags[k], truth=exact.of(k))
        if not cmp.ok:
            raise Fail("correctness", f"{label}: {cmp.message}", max_abs_err=cmp.max_abs_err,
                       max_rel_err=cmp.max_rel_err)


def sim_summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The structured part of a failed emulated run: status and the rules broken (details.emulator)."""
    last = reports[-1]
    return {"status": last.get("status"), "error": last.get("error", ""),
            "violations": [{k: v.get(k) for k in ("rule", "severity", "file", "line", "block", "count", "message")}
                           for r in reports for v in r.get("violations") or []][:50]}


def case_label(task: Task, k: int) -> str:
    return f"case {k + 1}/{len(task.cases)} ({case_shapes(task, k)})"


def case_shapes(task: Task, k: int) -> str:
    """A case's inputs in a few words: ``x float16[1, 128, 4096], normalized_shape=[4096]``."""
    import json

    try:
        inputs = json.loads(task.cases[k]).get("inputs") or []
    except (ValueError, AttributeError):
        return "?"
    parts = []
    for i in inputs:
        if not isinstance(i, dict):
            continue
        if i.get("type") == "tensor":
            parts.append(f"{i.get('name')} {i.get('dtype')}{i.get('shape')}")
        else:
            parts.append(f"{i.get('name')}={i.get('value')}")
    return ", ".join(parts)[:300]


def geomean_timing(results: list[latency.Timing]) -> latency.Timing:
    """One latency for a task with cases: the geometric mean of every field over the cases."""
    import math

    def g(values: list[float]) -> float:
        vals = [max(x, 1e-12) for x in values]
        return math.exp(sum(math.log(x) for x in vals) / len(vals))

    compile_ms = [t.compile_ms for t in results]
    vs_compile = [t.speedup_vs_compile for t in results]
    return latency.Timing(
        candidate_ms=g([t.candidate_ms for t in results]), reference_ms=g([t.reference_ms for t in results]),
        speedup=g([t.speedup for t in results]), noise=max(t.noise for t in results),
        ci_low=g([t.ci_low for t in results]), ci_high=g([t.ci_high for t in results]),
        rounds=sum(t.rounds for t in results),
        compile_ms=g(compile_ms) if all(c is not None for c in compile_ms) else None,  # type: ignore[arg-type]
        speedup_vs_compile=g(vs_compile) if all(c is not None for c in vs_compile) else None,  # type: ignore[arg-type]
        kind=results[0].kind)


# how one plain trial each calls both models, as a user does (red-team round 11; docs/verifier.md "The model is
# called as a user calls it"): in eval() mode, by keyword with Model.forward's parameter names, one tensor for inputs
# of one shape and dtype. The first plain trials get them in this order (with fewer plain trials, the last gets
# the rest).
CONVENTIONS = ("eval", "keywords", "alias")
CONVENTION_LABELS = {"eval": "eval mode", "keywords": "inputs by keyword", "alias": "one tensor for equal inputs"}
CONVENTION_NOTES = {
    "eval": "both models ran in eval() mode (model.eval(), as a user's inference runs them: a norm uses its "
            "running statistics, a dropout is the identity)",
    "keywords": "the inputs were passed by keyword with Model.forward's parameter names, model(name=tensor, ...), as "
                "a user may call it (a forward that does not take those names is called by position)",
    "alias": "inputs of the same shape and dtype were one tensor passed for each of them, model(x, x), as a user "
             "may call it",
}


def trial_conventions(plan: list[tuple[str, str, int]]) -> dict[int, frozenset[str]]:
    """Which plain ("none") trials of ``plan`` call the models in which of `CONVENTIONS`."""
    plain = [i for i, (_, perturb, _) in enumerate(plan) if perturb == "none"]
    out: dict[int, set[str]] = {}
    for j, c in enumerate(CONVENTIONS):
        if plain:
            out.setdefault(plain[min(j, len(plain) - 1)], set()).add(c)
    return {i: frozenset(cs) for i, cs in out.items()}


def keyword_spec(source: str) -> dict[str, Any] | None:
    """{"positional": Model.forward's positional-only parameters (after self), "names": the positional-or-keyword
    ones after them, up to a *args}, read from the task's (trusted) source; None where Model.forward is not a plain
    `def` of class Model or takes no keyword-callable parameter."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    params = [a.arg for a in f.args.posonlyargs + f.args.args][1:]
                    positional = max(0, len(f.args.posonlyargs) - 1)
                    names = params[positional:]
                    return {"positional": positional, "names": names} if names else None
    return None


def _structure_text(structure: Any) -> str:
    """"tensor" / "tuple of N" / "list of N" (worker.run's reply) as feedback text."""
    s = str(structure)[:40]
    return "a tensor" if s == "tensor" else f"a {s} tensor(s)" if s[:5] in ("tuple", "list ") else repr(s)


class WorkerJudge:
    """Judges one candidate in one sandboxed worker for the verifier ``v``."""

    def __init__(self, v: Any, task: Task, source: str, ref: Reference, cand: WorkerHandle, rng: random.Random,
                 init_seed: int, init_args: list[Any]):
        self.v, self.cfg = v, v.config
        self.task, self.source, self.ref, self.cand, self.rng = task, source, ref, cand, rng
        self.init_seed, self.init_args = init_seed, init_args
        self.params_seed: int | None = None  # set for the perturbed-parameter trial (and the timing after it)
        self.reports: list[list[dict[str, Any]]] = []  # emulator reports per correctness trial
        self.io_bytes: tuple[int, int] | None = None  # (input bytes, output bytes) of the first judged trial
        # timing_mode "model": per judged trial, a digest of each input and of all expected outputs (value_free_inputs)
        self.digests: list[tuple[list[str], str]] = []
        self.input_bytes: list[int] = []  # bytes per input of the first judged trial
        self.state = model_state.StateJudge(self.cfg.tol)  # ModelNew's parameters and buffers against Model's
        # what the model worker's float32 answer must resolve before large values are planted at a level
        # (sandboxed/large_bound.py): this configuration's tolerances per output dtype, [elementwise, norm-wise]
        ref.strided = bool(self.cfg.strided_inputs)
        ref.resolve = {str(dt).removeprefix("torch."): [tl.elementwise, min(tl.reduction, tl.normwise(False))]
                       for dt in RESOLVED_DTYPES for tl in [correctness.tolerance(dt, self.cfg.tol)]}

    def judge(self, gates: dict[str, bool | None], timings: dict[str, float],
              details: dict[str, Any]) -> latency.Timing | None:
        v, cfg, cand = self.v, self.cfg, self.cand
        builds = v._builds
        # gate 2: compile (native builds happen while the candidate module is imported)
        t0 = time.perf_counter()
        reply = v._cand_call(cand, {"op": "load", "source": self.source, "threads": cfg.threads,
                                    **v.backend.load_message()}, cfg.load_timeout_s, "import")
        timings["load"] = time.perf_counter() - t0 - builds.seconds
        if builds.hack:
            raise Fail("hack", "The native code breaks the verifier's rules:\n" + "\n".join(builds.hack[:8]))
        gates["hack"] = None  # the dynamic half is decided during the correctness trials
        if builds.errors:
            raise Fail("compile", "Native build failed:\n" + builds.errors[-1])
        if not reply.get("ok"):
            msg = f"importing the candidate failed: {reply.get('error')}"
            if reply.get("detail"):
                msg += "\n" + str(reply["detail"])
            raise Fail("hack" if reply.get("phase") == "hack" else "compile", msg)
        gates["compile"] = True

        self.init_candidate(None)

        # gate 3: correctness, with the dynamic anti-hack checks on every trial; a task with cases
        # (evokernel/task_formats/cases.py) runs the whole trial plan on every case, each from its own seeds
        t0 = time.perf_counter()
        ref_s: list[float] = []
        record: dict[str, Any] = {"passed": 0, "nonfinite_reference": []}
        details["trials"] = record  # filled as the trials go (a failed verdict says how far they got)
        cases: list[int | None] = list(range(len(self.task.cases))) or [None]
        per_case: dict[int | None, tuple[list[list[dict[str, Any]]], tuple[int, int] | None]] = {}
        plan: list[tuple[str, str, int]] = []
        for k in cases:
            self.ref.case, self.io_bytes, first_report = k, None, len(self.reports)
            plan = trial_plan(cfg, self.rng)
            if k is not None:
                plan = [(f"{case_label(self.task, k)}: {label}", p, s) for label, p, s in plan]
                record["case"] = k
            conventions = trial_conventions(plan) if k in (None, 0) else {}
            for i, (label, perturb, seed) in enumerate(plan):
                self.run_trial(label, perturb, seed, i == 0 and k in (None, 0), ref_s, record,
                               conventions.get(i, frozenset()))
            per_case[k] = (self.reports[first_report:], self.io_bytes)
        self.ref.case = cases[0]
        self.io_bytes = per_case[cases[0]][1]
        if cfg.perturbed_parameters:
            self.params_seed = self.rng.randrange(2**31)
            # the constructor's floats and constant buffers varied where the reference accepts them (init_args.py)
            args = self.ref.init(self.init_seed, self.params_seed, self.cfg.vary_init_floats)
            self.init_candidate(self.params_seed, args, self.ref.widen_buffers)
            record["perturbed_parameters"] = True
            for j, inputs in enumerate(PARAMETER_TRIAL_INPUTS):
                label = f"trial {len(plan) + 1 + j} (perturbed parameters, {inputs} inputs)"
                if j:  # new values in the parameters' storage after a call, as a checkpoint load writes them
                    self.reload()
                    label = f"{label[:-1]}, parameters negated in place)"
                # the first in eval mode: a user's inference runs the trained parameters there (red team round 12:
                # a LayerNorm that dropped its affine in eval mode passed, the eval-mode trial seeing weight 1, bias 0)
                mode = frozenset({"eval"}) if j == 0 else frozenset()
                try:
                    self.run_trial(label, inputs, self.rng.randrange(2**31), False, ref_s, record, mode)
                except Fail as f:
                    if f.gate == "correctness":
                        f.feedback = f"{f.feedback}\nIn this trial {PERTURBED_PARAMETERS}."
                        if j:
                            f.feedback = f"{f.feedback} {RELOADED}"
                    raise
        timings["correctness_trials"] = time.perf_counter() - t0
        notes = record["nonfinite_reference"]
        if len(notes) == record["passed"] and all(n["nonfinite_elements"] == n["elements"] for n in notes):
            raise TaskError(f"{self.task.path}: the reference output is NaN/Inf in every element on every trial")
        gates["hack"] = True

        warnings = v.backend.report_warnings(self.reports)
        if warnings:
            details["emulator_warnings"] = warnings
        if not cfg.timing:
            return None
        if cases == [None]:
            timing = self.timed(details, timings, ref_s)
            self.state_after_timing(timings)
            return timing
        # a task with cases: every case timed (the models of the perturbed-parameter trial), then the geomean
        all_reports = self.reports
        results: list[latency.Timing] = []
        details["cases"] = []
        try:
            for k in cases:
                self.ref.case = k
                self.reports, self.io_bytes = per_case[k]
                if v.backend.timing_mode == "model":  # the eager side is recorded on this case's inputs
                    self.ref.make_inputs(self.rng.randrange(2**31), "none")
                t = self.timed(details, timings, ref_s)
                results.append(t)
                details["cases"].append({"case": k, "candidate_ms": t.candidate_ms, "reference_ms": t.reference_ms,
                                         "speedup": t.speedup, "inputs": case_shapes(self.task, k)})
        finally:
            self.reports = all_reports
        self.state_after_timing(timings)
        return geomean_timing(results)

    def state_after_timing(self, timings: dict[str, float]) -> None:
        """Measured timing: both sides ran every timed round's call, so their states must agree again
        (`model_state`). A modelled latency runs no further candidate calls."""
        if self.v.backend.timing_mode == "model" or not self.cfg.model_state:
            return
        t0 = time.perf_counter()
        self.check_state_after_timing()
        timings["state_after_timing"] = time.perf_counter() - t0

    def timed(self, details: dict[str, Any], timings: dict[str, float], ref_s: list[float]) -> latency.Timing:
        """The latency of the current inputs' case: modelled by the backend, or measured."""
        v, cfg = self.v, self.cfg
        if v.backend.timing_mode == "model":
            return self.model_timing(details, timings)
        compiled = None
        if cfg.compile_baseline:  # compiled once per task and kept with its reference; None if compile fails
            compiled = compile_baseline.prepare(self.ref, self.task, self.init_seed, self.params_seed, self.rng,
                                                details, timings)
        t1 = time.perf_counter()
        timing = timing_protocol.measure(v, self.ref, self.cand, self.rng, cfg.run_timeout_s + 50 * max(ref_s),
                                         timings, details, compiled)
        timings["timing"] = timings.get("timing", 0.0) + time.perf_counter() - t1
        return timing

    def init_candidate(self, params_seed: int | None, init_args: list[Any] | None = None,
                       widen_buffers: bool = False) -> None:
        """Construct ModelNew from the verdict's init seed (``params_seed``: constant initialisers drawn) with
        ``init_args`` (default: get_init_inputs()'s; the perturbed-parameter trials: those the reference was built
        with) and, with ``widen_buffers``, its constant buffers widened as the reference's were."""
        init_args = self.init_args if init_args is None else init_args
        msg: dict[str, Any] = {"op": "init", "seed": self.init_seed, "init_args": init_args}
        if params_seed is not None:
            msg["params_seed"] = params_seed
            msg["widen_buffers"] = widen_buffers
        reply = self.v._cand_call(self.cand, msg, self.cfg.load_timeout_s, "ModelNew construction")
        if not reply.get("ok") and reply.get("reason") == "init_compute":
            raise init_compute_fail(str(reply.get("error")))
        if not reply.get("ok"):
            raise Fail("hack" if reply.get("phase") == "hack" else "runtime", f"constructing ModelNew{tuple(init_args)} failed: {reply.get('error')}\n"
                       f"{reply.get('detail', '')}".strip())
        if self.cfg.model_state:
            self.state.baseline(self.cand, self.candidate_state("after construction"))

    def candidate_state(self, when: str) -> list[Any]:
        """The candidate's state entries now, written at offset 0 of its region (`model_state`)."""
        limit = self.state.limit(self.ref.state_bytes)
        for _ in range(4):
            reply = self.v._cand_call(self.cand, {"op": "state", "offset": 0}, self.cfg.load_timeout_s,
                                      f"ModelNew's parameters and buffers ({when})")
            if not reply.get("ok"):
                raise Fail("hack" if reply.get("phase") == "hack" else "runtime",
                           f"reading ModelNew's parameters and buffers ({when}) failed: {reply.get('error')}")
            if "need" not in reply:
                return list(reply.get("state") or [])
            need = int(reply["need"])
            if need > limit:
                raise Fail("runtime", f"ModelNew's parameters and buffers take {need / 2**20:.1f} MiB ({when}), more "
                           f"than the verifier reserves for them ({model_state.STATE_FACTOR}x Model's "
                           f"{self.ref.state_bytes / 2**20:.1f} MiB + {model_state.SLACK_BYTES >> 20} MiB)")
            self.cand.ensure_capacity(need + (1 << 16))
        raise Fail("runtime", f"ModelNew's parameters and buffers ({when}) did not fit in the space reserved for them")

    def check_state_after_timing(self) -> None:
        """The models' state after the timed rounds, where each side ran the same calls (`model_state`)."""
        ref_state = self.state.reference(self.ref.handle, self.ref.state())
        entries = self.candidate_state("after the timed calls")
        self.state.check("after the timed calls", ref_state, self.cand, entries, values=False)

    def reload(self) -> None:
        """Both models' floating parameters negated in place (worker.reload): the reference's first, then the
        candidate's (a failure there is the candidate's: a model whose parameters cannot be written)."""
        self.ref.call({"op": "reload"})
        reply = self.v._cand_call(self.cand, {"op": "reload"}, self.cfg.load_timeout_s, "writing ModelNew's parameters")
        if not reply.get("ok"):
            raise Fail("runtime", f"writing ModelNew's parameters in place failed: {reply.get('error')}")
        if self.cfg.model_state:  # its state as written is what later calls are compared with (`model_state`)
            self.state.baseline(self.cand, self.candidate_state("after its parameters were written"))

    def run_trial(self, label: str, perturb: str, seed: int, first: bool, ref_s: list[float],
                  record: dict[str, Any], convention: frozenset[str] = frozenset()) -> None:
        """One correctness trial (a non-finite reference is drawn again, then judged masked: `reference_trial`),
        calling both models in the ``convention`` given (`CONVENTIONS`)."""
        if "keywords" in convention and keyword_spec(self.task.source) is None:
            convention = convention - {"keywords"}
        if convention:
            label += " (" + ", ".join(CONVENTION_LABELS[c] for c in CONVENTIONS if c in convention) + ")"
        self.ref.convention = convention
        try:
            self._run_trial(label, perturb, seed, first, ref_s, record)
        except Fail as f:
            used = [c for c in CONVENTIONS if c in convention and (c != "alias" or self.ref.aliases)]
            if f.gate == "correctness" and used:
                f.feedback = f"{f.feedback}\nIn this trial " + "; ".join(CONVENTION_NOTES[c] for c in used) + "."
            raise
        finally:
            self.ref.convention = frozenset()

    def _run_trial(self, label: str, perturb: str, seed: int, first: bool, ref_s: list[float],
                   record: dict[str, Any]) -> None:
        state = bool(self.cfg.model_state)
        seed, in_metas, out_metas, seconds, note = reference_trial(self.ref, self.rng, seed, perturb, state=state)
        # read before the region is reused (a reduction's float64 answer is written there)
        ref_state = self.state.reference(self.ref.handle, self.ref.last_state) if state else None
        ref_s.append(seconds)
        if note is not None:
            record["nonfinite_reference"].append({"trial": label, **note})
        level = self.ref.last_large_level if perturb in LARGE_IN else 0
        if level:
            record.setdefault("large_max", {})[label] = float(f"{large_top(level):.3g}")
        expected = [regions.tensor(self.ref.handle, m) for m in out_metas]
        inputs = [regions.tensor(self.ref.handle, m) for m in in_metas]
        if self.io_bytes is None:
            self.input_bytes = [t.numel() * t.element_size() for t in inputs]
            self.io_bytes = (sum(self.input_bytes), sum(t.numel() * t.element_size() for t in expected))
        if self.v.backend.timing_mode == "model" and self.io_bytes[0] + self.io_bytes[1] <= DIGEST_MAX_BYTES:
            self.digests.append(([_digest([t]) for t in inputs], _digest(expected)))
        try:
            self.check_trial(in_metas, inputs, expected, label, late_check=first,
                             timeout=self.cfg.run_timeout_s + 50 * seconds,
                             truth=lambda seed=seed, perturb=perturb: self.ref.truth(seed, perturb),
                             ties=perturb in TIES, ref_state=ref_state, state_values=perturb not in LARGE_IN)
        except Fail as f:
            # a strided trial's runtime or data-movement failure (a binding refusing a view) is told the layout too
            if perturb in INPUT_NOTES and (f.gate == "correctness" or perturb in STRIDED_INPUTS):
                f.feedback = f"{f.feedback}\nIn this trial {INPUT_NOTES[perturb]}."
                if level:
                    f.feedback += (f" For this task the large values went up to {large_top(level):.3g} only (float32 "
                                   "values; the largest range at which PyTorch's own float32 answer resolves every "
                                   "output element).")
            raise
        record["passed"] += 1

    def check_trial(self, in_metas: list[TensorMeta], inputs: list[torch.Tensor], expected: list[torch.Tensor],
                    label: str, late_check: bool, timeout: float,
                    truth: Callable[[], list[correctness.Exact]] | None = None, ties: bool = False,
                    ref_state: dict[str, Any] | None = None, state_values: bool = True) -> None:
        """One candidate call judged: its run, the inputs after it, its outputs and (with ``ref_state``, the
        reference's after the same call) the model's state (`model_state`; ``state_values``: the values of what
        Model's call changed too, not on planted large values)."""
        v, cand, ref = self.v, self.cand, self.ref
        out_offset = ref.input_bytes
        regions.copy_prefix(ref.handle, cand, out_offset,
                            out_offset * 2 + 4 * max(ref.output_bytes, 1 << 12) + (1 << 20) + self.state.reserve)
        aliases = ref.aliases if "alias" in ref.convention and ref.aliases else list(range(len(in_metas)))
        metas_json = [in_metas[a].to_json() for a in aliases]  # an aliased input: the first one's memory
        msg: dict[str, Any] = {"op": "run", "inputs": metas_json, "record": True, "return_inputs": True,
                               "out_offset": out_offset}
        if ref_state is not None:
            msg["state"] = True
        if "eval" in ref.convention:
            msg["eval"] = True
        if "keywords" in ref.convention:
            msg["keywords"] = keyword_spec(self.task.source)
        reply = v._cand_call(cand, ref.run_msg(msg), timeout, f"forward ({label})")
        reports = reply.get("native_reports")
        if isinstance(reports, list):
            try:  # the worker sends repeated blocks once (backends/ascend_sim/report_size.py)
                reports = v.backend.receive_reports(reports)
            except ValueError as exc:
                raise Fail("runtime", f"{label}: malformed emulator report: {exc}") from None
            self.reports.append(reports)
        if not reply.get("ok"):
            # "hack": the worker found candidate code breaking a run-time rule (a flagged output, dispatch state)
            gate = {"output": "correctness", "hack": "hack"}.get(str(reply.get("phase")), "runtime")
            extra = {"emulator": sim_summary(reports)} if isinstance(reports, list) and reports else {}
            error = str(reply.get("error"))
            if reply.get("reason") == "output_too_large":  # e.g. torch.empty_like(x) for a reduction's output
                shapes = ", ".join(str(tuple(t.shape)) for t in expected)
                error += f"; the reference returns {'shapes' if len(expected) > 1 else 'shape'} {shapes}"
            raise Fail(gate, f"{label}: forward failed: {error}\n{reply.get('detail', '')}".strip(), **extra)
        if isinstance(reports, list) and reports:
            # the worker raises on a broken rule; the parent judges the reports again all the same
            broken = [fb for fb in (self.v.backend.judge_report(r) for r in reports if isinstance(r, dict)) if fb]
            if broken or not all(isinstance(r, dict) for r in reports):
                raise Fail("runtime", f"{label}: {broken[0] if broken else 'malformed emulator report'}",
                           emulator=sim_summary([r for r in reports if isinstance(r, dict)] or [{}]))
        violations = reply.get("violations") or {}
        if any(not str(k).startswith(MOVEMENT_PREFIX) for k in violations):  # PyTorch computed
            raise torch_ops_fail(label, violations, "the native kernel", "native code")
        if not reply.get("native_calls"):
            raise Fail("hack", f"{label}: no native kernel ran during forward (a decoy kernel, or the output was "
                       "produced without computing); forward must call the compiled code")
        try:
            outs = [TensorMeta.from_json(m, cand.capacity) for m in reply.get("outputs") or []]
            after = [TensorMeta.from_json(m, cand.capacity) for m in reply.get("inputs_after") or []]
        except ProtocolError as exc:
            raise Fail("runtime", f"{label}: malformed reply from the candidate worker: {exc}") from None
        if len(outs) != len(expected):
            raise Fail("correctness", f"{label}: forward returned {len(outs)} tensor(s), expected {len(expected)}")
        structure = reply.get("structure")
        if ref.structure and structure != ref.structure:  # a user's code depends on it: model(x).sum(), a, b = ...
            raise Fail("correctness", f"{label}: forward returned {_structure_text(structure)}; the reference returns "
                       f"{_structure_text(ref.structure)} (return the same structure: a tensor, or a tuple or list "
                       "of as many tensors)")
        got = [regions.tensor(cand, m) for m in outs]
        if late_check:
            snapshot = [cand.read(m) for m in outs]
        if len(after) != len(in_metas) or not all(regions.same_bytes(cand, a, ref.handle, b)
                                                  for a, b in zip(after, in_metas)):
            raise Fail("correctness", f"{label}: {INPUTS_MODIFIED}")
        if violations:  # PyTorch moved data (after the inputs: a kernel that returns the input it overwrote in place
            # is told that it modified its input, not that it returned the input's memory)
            raise torch_ops_fail(label, violations, "the native kernel", "native code")
        compare_outputs(label, got, expected, inputs, self.cfg.tol, truth, ties)
        if ref_state is not None:  # the state after the call (its bytes were written after the outputs)
            self.state.check(label, ref_state, cand, reply.get("state"), values=state_values)
        if late_check:
            time.sleep(0.05)
            if any(cand.read(m) != s for m, s in zip(outs, snapshot)):
                raise Fail("hack", f"{label}: the output kept changing after forward returned (background work); "
                           "forward must finish its computation before returning")

    def model_timing(self, details: dict[str, Any], timings: dict[str, float]) -> latency.Timing:
        """timing_mode "model": estimates for the kernel (from the first trial's emulator reports) and
        for the eager reference (from its recorded operators), on the same hardware constants."""
        t0 = time.perf_counter()
        reports = self.reports[0] if self.reports else []
        if not reports:
            raise Fail("hack", "no emulated operator ran during forward; forward must call custom_ops_lib")
        try:
            est = self.v.backend.estimate(reports, self.ref.recorded_ops())
        except (KeyError, TypeError, ValueError) as exc:
            raise Fail("runtime", f"the emulator's report could not be read by the latency model: {exc}") from None
        timings["timing"] = time.perf_counter() - t0
        self.check_modelled_traffic(est, details)
        kernel_ms, eager_ms = est["kernel_us"] / 1e3, est["eager_us"] / 1e3
        speedup = eager_ms / kernel_ms if kernel_ms > 0 else float("inf")
        details["estimate"] = est
        details["profile"] = est.get("profile", "")
        return latency.Timing(candidate_ms=kernel_ms, reference_ms=eager_ms, speedup=speedup, noise=0.0,
                              ci_low=speedup, ci_high=speedup, rounds=0, kind="estimate")

    def check_modelled_traffic(self, est: dict[str, Any], details: dict[str, Any]) -> None:
        """The emulator's counters live in the candidate's process, so the parent checks what they claim
        against what it knows itself before it models a latency from them: the backend's audit (ascend-sim:
        every report ran a tiling its host process computed, with that many blocks; the Ascend C API wrote
        every output byte the trials compared; the schedules match the hardware constants sent and their own
        copy counters: ascend_sim/audit.py), and the traffic floor: a forward reads every input byte and writes
        every output byte through global memory. A report claiming less (counters tampered with, or work done
        outside the emulated kernel) would model a kernel faster than the work the data requires: a hack."""
        problems = self.v.backend.audit(self.v._builds, self.reports, self.io_bytes)
        if problems:
            details["report_audit"] = problems[:20]
            raise Fail("hack", "the emulator's reports do not describe the work the outputs required (counters "
                       "tampered with, or work done outside the Ascend C API):\n" + "\n".join(problems[:6]))
        if self.io_bytes is None:
            return
        free = value_free_inputs(self.digests)
        in_bytes = self.io_bytes[0] - sum(self.input_bytes[i] for i in free if i < len(self.input_bytes))
        need = in_bytes + self.io_bytes[1]
        gm = sum(float(k.get("gm_bytes") or 0.0) for k in est.get("kernels") or [])
        details["modelled_traffic"] = {"gm_bytes": gm, "task_bytes": need}
        if free:
            details["modelled_traffic"]["value_free_inputs"] = free
        if gm < need:
            raise Fail("hack", f"the emulator's report shows {gm / 2**20:.3f} MiB of global-memory traffic, but the "
                       f"operator must read {in_bytes / 2**20:.3f} MiB of inputs and write "
                       f"{self.io_bytes[1] / 2**20:.3f} MiB of outputs: the emulator's counters do not describe the "
                       "work (move every input into the UB with DataCopy and every output back to GM)")

