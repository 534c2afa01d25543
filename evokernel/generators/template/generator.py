"""The offline ``template`` generator: analysis -> stage plan -> schedule -> candidate.

Drafting picks a schedule (memory's best feasible schedule of the same family, else a seeded
exploration -- sometimes with the risky no-remainder knob -- or the conservative default);
refining applies one schedule transform to the start point, skipping transforms already tried
among its children and preferring those that paid off in retrieved memory.

Layers: the front end (:mod:`.front`: task analysis, lowering into a stage plan, the schedule search) feeds two
back ends, ``cpu`` (C++ through ``load_cpp``: :mod:`.cpu.candidate`, :mod:`.cpu.schedules`) and ``ascend-sim`` /
``ascend`` (Ascend C operator projects: :mod:`.ascend.families`, :mod:`.ascend.schedules`); this module, above
both, holds the draft and refine policy.
"""
from __future__ import annotations

import json
import math
import random
import zlib
from typing import Any

from evokernel.generators.base import DRAFT, REFINE, Generation, GenerationError, GenerationRequest
from evokernel.generators.template.ascend import families as ascend_families
from evokernel.generators.template.ascend import schedules as AS
from evokernel.generators.template.ascend.project import candidate_file
from evokernel.generators.template.cpu import schedules as S
from evokernel.generators.template.cpu.candidate import render_candidate
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Plan, build_plan
from evokernel.generators.template.front.search import canonical, knobs_of, memory_draft_knobs
from evokernel.generators.template.front.trace import analyze
from evokernel.verifier.backends.registry import REGISTRY

_PLANS: dict[str, Plan] = {}
_ASCEND_OPS: dict[str, Any] = {}  # AscendOp, CubeOp or ConvOp


def plan_for(task: Any, eval_mode: bool = False) -> Plan:
    """Analyse and plan ``task`` (cached by ``task.key``; ``eval_mode``: the model after ``model.eval()``); raises
    GenerationError."""
    key = task.key + (":eval" if eval_mode else "")
    if key not in _PLANS:
        try:
            _PLANS[key] = build_plan(analyze(task, eval_mode=eval_mode))
        except AnalysisError as exc:
            mode = " in eval mode" if eval_mode else ""
            raise GenerationError(f"template generator cannot handle {task.name}{mode}: {exc}") from None
    return _PLANS[key]


def ascend_op_for(task: Any) -> Any:
    """The task as one Ascend C operator (cached by ``task.key``); raises GenerationError."""
    key = task.key
    if key not in _ASCEND_OPS:
        try:
            plan = build_plan(analyze(task, allow_half=True))  # float16 tasks: float compute, half I/O
            _ASCEND_OPS[key] = ascend_families.prepare(plan, task.name, task.source)
        except AnalysisError as exc:
            raise GenerationError(f"template generator cannot write an Ascend C kernel for {task.name}: {exc}") from None
    return _ASCEND_OPS[key]


def _anchors(plan: Plan) -> list[tuple[str, dict[str, Any], dict[str, int]]]:
    """(op, attrs, dims) of the plan's gemm and conv anchors, for the shape prior."""
    g, out = plan.graph, []
    for st in plan.stages:
        if st.anchor is None:
            continue
        node = g.nodes[st.anchor]
        if node.op == "gemm":
            out.append(("gemm", node.attrs, {d: int(node.attrs[d]) for d in ("m", "n", "k")}))
        elif node.op in ("conv2d", "convnd"):
            x, w = g.nodes[node.args[0]], g.nodes[node.args[1]]
            out.append((node.op, node.attrs, {"ci": int(x.shape[1]), "kvol": math.prod(int(d) for d in w.shape[2:])}))
    return out


def _describe(sched: dict[str, Any]) -> str:
    knobs = knobs_of(sched)
    return ", ".join(f"{k}={v}" for k, v in knobs.items())


def _code_part(source: str) -> str:
    """The candidate without its leading docstring (which names the schedule)."""
    parts = source.split('"""', 2)
    return parts[2] if len(parts) == 3 else source


class TemplateGenerator:
    """Deterministic, offline kernel generator (``name = "template"``)."""

    name = "template"

    def __init__(self, explore_prob: float = 0.35):
        self.explore_prob = explore_prob
        self._source_cache: dict[tuple[str, str], str] = {}
        self._ascend_cache: dict[tuple[str, str], tuple[str, str, dict[str, int] | None]] = {}

    # ------------------------------------------------------------------------------ public
    def generate(self, request: GenerationRequest) -> Generation:
        target = REGISTRY[request.backend].template if request.backend in REGISTRY else None
        if target == "ascend":  # the back end named by the backend's registry row
            return self._generate_ascend(request)
        if target != "cpu":
            raise GenerationError(f"template generator targets the cpu and ascend-sim/ascend backends, "
                                  f"not {request.backend}")
        plan = plan_for(request.task)
        if request.stage == REFINE and request.start_point is not None:
            sched = self._refine_schedule(request, plan)
        elif request.stage in (DRAFT, REFINE):
            sched = self._draft_schedule(request, plan)
        else:
            raise GenerationError(f"unknown stage {request.stage!r}")
        source = self.render(request.task, plan, sched)
        stages = " -> ".join(st.family for st in plan.stages)
        summary = f"{sched['transform']}: {sched['family']} kernel ({stages}) with {_describe(sched)}"
        reply = (f"template generator: {len(plan.stages)} native stage(s) [{stages}] for {request.task.name}; "
                 f"schedule {sched}")
        return Generation(source=source, summary=summary, schedule=sched, model="template", reply=reply)

    def render(self, task: Any, plan: Plan, sched: dict[str, Any]) -> str:
        key = (task.key, canonical(sched))
        if key not in self._source_cache:
            header = (f"Template-generated kernel for {task.name}: stages "
                      f"{' -> '.join(st.family for st in plan.stages)}.\n\nSchedule: {_describe(sched)}\n")
            # the forward a user's inference runs (model.eval()) gets its own kernels where it differs
            eval_plan = plan_for(task, eval_mode=True)
            try:
                self._source_cache[key] = render_candidate(plan, knobs_of(sched), header, eval_plan)
            except AnalysisError as exc:
                raise GenerationError(f"template generator cannot handle {task.name}: {exc}") from None
        return self._source_cache[key]

    # ------------------------------------------------------------------------------ draft
    def _rng(self, request: GenerationRequest, salt: str) -> random.Random:
        return random.Random(zlib.crc32(f"{request.task.key}:{request.seed}:{salt}".encode()))

    def _draft_schedule(self, request: GenerationRequest, plan: Plan) -> dict[str, Any]:
        family, families = plan.primary, plan.families
        # the algorithm comes from this task's shapes (a remembered schedule of another task's gemm or
        # conv says which tiles and vector widths paid off, not which algorithm suits these shapes)
        by_shape = S.shape_knobs(_anchors(plan))
        retry_after_failure = request.iteration > 0 and bool(request.last_feedback)
        remembered, source_id = memory_draft_knobs(request.context, family)
        if remembered is not None:
            if retry_after_failure:  # another task's schedule failed here: keep it, minus the risky knobs
                remembered = {**remembered, **{k: S.CONSERVATIVE[k] for k in S.RISKY}}
            sched = S.make_schedule(family, families, {**S.CONSERVATIVE, **remembered, **by_shape}, "memory")
            sched["from"] = source_id
            return sched
        rng = self._rng(request, "draft")
        if not retry_after_failure and rng.random() < self.explore_prob:
            allow_risky = not S.risky_failed(request.context, family)
            return S.make_schedule(family, families, S.explore_knobs(families, rng, allow_risky), "explore")
        # after a failed draft: the plainest forms (direct conv, ikj gemm), whatever the shapes
        return S.make_schedule(family, families, {**S.CONSERVATIVE, **({} if retry_after_failure else by_shape)},
                               "draft")

    # ----------------------------------------------------------------------------- refine
    def _refine_schedule(self, request: GenerationRequest, plan: Plan) -> dict[str, Any]:
        family, families = plan.primary, plan.families
        sp = request.start_point
        assert sp is not None
        start = sp.schedule() if hasattr(sp, "schedule") else None
        if not start or start.get("family") != family:
            start = S.make_schedule(family, families, dict(S.CONSERVATIVE), "draft")
        start = S.make_schedule(family, families, {**S.CONSERVATIVE, **knobs_of(start)}, "start")
        tried = {canonical(start)}
        tried_code = {_code_part(self.render(request.task, plan, start))}
        for child in request.children:
            cs = child.schedule() if hasattr(child, "schedule") else None
            if cs:
                cs = S.make_schedule(family, families, {**S.CONSERVATIVE, **knobs_of(cs)}, "x")
                tried.add(canonical(cs))
                tried_code.add(_code_part(self.render(request.task, plan, cs)))
        scores = S.transform_scores(request.context, family)
        prefer: list[str] = []
        start_meta = sp.meta or {}
        if start_meta.get("feasible") is False and any(start.get(k) == v for k, v in S.RISKY.items()):
            prefer.append("safe_tail")  # repair the known-risky knob first
        def is_real(cand: dict[str, Any]) -> bool:
            # a transform is real only if it yields code not generated before (a knob this plan does
            # not use, or a combination equivalent to a tried child, is cosmetic)
            return _code_part(self.render(request.task, plan, cand)) not in tried_code

        chosen = S.pick_refinement(start, tried, scores, request.seed, is_real, prefer)
        if chosen is None:
            raise GenerationError("no untried schedule left")
        return chosen

    # ---------------------------------------------------------------------------- ascend
    def _generate_ascend(self, request: GenerationRequest) -> Generation:
        op = ascend_op_for(request.task)
        if request.stage == REFINE and request.start_point is not None:
            sched = self._ascend_refine(request, op)
        elif request.stage in (DRAFT, REFINE):
            sched = self._ascend_draft(request, op)
        else:
            raise GenerationError(f"unknown stage {request.stage!r}")
        source, _, geo = self.render_ascend(request.task, op, sched)
        if geo is None:
            raise GenerationError(f"no feasible Ascend C tiling for {request.task.name} with {_describe(sched)}")
        knobs = ", ".join(f"{k}={v}" for k, v in knobs_of(sched).items())
        summary = f"{sched['transform']}: Ascend C {op.op_class} kernel ({op.family}) with {knobs}"
        reply = (f"template generator: Ascend C operator {op.op_type} for {request.task.name} ({op.op_class}, "
                 f"frame {op.rows}x{op.N}); schedule {sched}; host tiling {geo}")
        return Generation(source=source, summary=summary, schedule=sched, model="template", reply=reply)

    def render_ascend(self, task: Any, op: Any, sched: dict[str, Any]
                      ) -> tuple[str, str, dict[str, int] | None]:
        """(candidate source, behaviour signature, host geometry or None when the tiling would fail).

        The signature is the kernel source plus the tiling the host computes for the task's shapes:
        two schedules with the same signature behave identically (e.g. a larger tile target for
        rows that already fit whole)."""
        key = (task.key, canonical(sched))
        if key not in self._ascend_cache:
            knobs = knobs_of(sched)
            try:
                parts, _, geo = ascend_families.render_project(op, knobs)
            except AnalysisError as exc:
                raise GenerationError(f"template generator cannot write an Ascend C kernel for {task.name}: "
                                      f"{exc}") from None
            header = (f"Template-generated Ascend C operator {op.op_type} for {task.name}: {op.op_class} "
                      f"({op.family}), frame {op.rows} x {op.N}.\n\nSchedule: {_describe(sched)}\n"
                      f"Host tiling for these shapes: {geo}\n")
            try:
                source = candidate_file(parts, header)
            except AnalysisError as exc:
                raise GenerationError(str(exc)) from None
            signature = parts["kernel_src"] + "\n" + json.dumps(geo, sort_keys=True)
            self._ascend_cache[key] = (source, signature, geo)
        return self._ascend_cache[key]

    def _ascend_feasible(self, task: Any, op: Any, sched: dict[str, Any]) -> bool:
        return self.render_ascend(task, op, sched)[2] is not None

    def _ascend_draft(self, request: GenerationRequest, op: Any) -> dict[str, Any]:
        family, task = op.family, request.task
        remembered, source_id = AS.memory_draft_knobs(request.context, family)
        if remembered is not None:
            sched = AS.make_schedule(family, {**AS.CONSERVATIVE, **remembered}, "memory")
            if self._ascend_feasible(task, op, sched):
                sched["from"] = source_id
                return sched
        rng = self._rng(request, "ascend-draft")
        retry_after_failure = request.iteration > 0 and bool(request.last_feedback)
        if not retry_after_failure and rng.random() < self.explore_prob:
            for _ in range(4):
                sched = AS.make_schedule(family, AS.explore_knobs(family, rng), "explore")
                if self._ascend_feasible(task, op, sched):
                    return sched
        if not retry_after_failure:  # knobs the family picks from the shapes (the cube's modelled base block)
            sched = AS.make_schedule(family, {**AS.CONSERVATIVE, **AS.draft_knobs(op)}, "draft")
            if self._ascend_feasible(task, op, sched):
                return sched
        sched = AS.make_schedule(family, dict(AS.CONSERVATIVE), "draft")
        if not self._ascend_feasible(task, op, sched):
            raise GenerationError(f"no feasible Ascend C tiling for {task.name} even with the conservative schedule "
                                  "(too many input queues for the 8 VECIN buffers, or the UB cannot hold a chunk)")
        return sched

    def _ascend_refine(self, request: GenerationRequest, op: Any) -> dict[str, Any]:
        family, task = op.family, request.task
        sp = request.start_point
        assert sp is not None
        start = sp.schedule() if hasattr(sp, "schedule") else None
        if not start or start.get("family") != family:
            start = AS.make_schedule(family, dict(AS.CONSERVATIVE), "draft")
        start = AS.make_schedule(family, {**AS.CONSERVATIVE, **knobs_of(start)}, "start")
        tried = {canonical(start)}
        tried_sig = {self.render_ascend(task, op, start)[1]}
        for child in request.children:
            cs = child.schedule() if hasattr(child, "schedule") else None
            if cs and cs.get("family") == family:
                cs = AS.make_schedule(family, {**AS.CONSERVATIVE, **knobs_of(cs)}, "x")
                tried.add(canonical(cs))
                tried_sig.add(self.render_ascend(task, op, cs)[1])
        scores = AS.prior_scores(op)
        for t, v in AS.transform_scores(request.context, family).items():
            scores[t] = scores.get(t, 0.0) + v
        prefer: list[str] = []
        if (sp.meta or {}).get("feasible") is False:
            prefer = ["count_form", "stream_rows", "single_buffer"]  # back towards the conservative forms

        def is_real(cand: dict[str, Any]) -> bool:
            # behaviour not generated before (same kernel and same host tiling = cosmetic) and a tiling
            # the host can compute
            _, sig, geo = self.render_ascend(task, op, cand)
            return geo is not None and sig not in tried_sig

        chosen = AS.pick_refinement(start, tried, scores, request.seed, is_real, prefer)
        if chosen is None:
            raise GenerationError("no untried schedule left")
        return chosen
