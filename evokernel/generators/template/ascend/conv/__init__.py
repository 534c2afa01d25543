"""The ``ascend_conv`` family (one convolution, two lowerings); its table row is :mod:`.family`."""
