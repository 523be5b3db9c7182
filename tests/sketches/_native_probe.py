"""A kernel that can fail, for tests/sketches/test_native.py."""

from dataaudit.sketches.kernels import kernel


@kernel()
def doubled(x):
    if x < 0:
        raise ValueError("negative")
    return x * 2


@kernel()
def total(values):
    s = values[0] * 0
    for v in values:
        s += v
    return s
