"""The GEMM on the cube unit, shared by the ``ascend_cube`` and ``ascend_conv`` families: the operator
(:mod:`.op`), its tiling (:mod:`.geometry`), the AIC kernel class (:mod:`.kernel`) and its batched form
(:mod:`.batch`)."""
