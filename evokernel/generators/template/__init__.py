"""The offline ``template`` generator: KernelBench tasks -> torch.fx analysis -> fused native stages -> C++ or
Ascend C candidates under explicit, refinable schedules. See docs/template-generator.md.

Layers: :mod:`.front` (analysis, lowering, the schedule search), the back ends :mod:`.cpu` and :mod:`.ascend`
(each with its family table), and :mod:`.generator` (the draft/refine policy) above them. This file is the
package's public entry for code outside it; no module of the package imports it."""
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.trace import analyze
from evokernel.generators.template.generator import TemplateGenerator, plan_for

__all__ = ["AnalysisError", "TemplateGenerator", "analyze", "plan_for"]
