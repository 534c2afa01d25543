"""The ``ascend_cube`` family (a matmul and what follows it); its table row is :mod:`.family`."""
