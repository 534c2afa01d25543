"""The template generator's Ascend C back end (``ascend-sim`` and ``ascend``): operator projects. Its families
(:mod:`.families`) are the vector ones (:mod:`.elementwise`, :mod:`.row`, :mod:`.colreduce`) and the sub-packages
:mod:`.cube` and :mod:`.conv`; what they share sits beside them (names, instruction sequences, the row program, the
project strings) and in :mod:`.gemm` (the GEMM on the cube unit, used by both cube and conv)."""
