"""The MAPTree paper's experiments, one module each (see :mod:`benchmarks.engine`)."""
