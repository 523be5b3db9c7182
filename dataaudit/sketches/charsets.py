"""The byte and code-point tables the tokenizing kernels and the normalization share, apart
from the kernels so that reading them loads no compiler (numba freezes them into the kernels)."""

from __future__ import annotations

import numpy as np

# what separates tokens: the ASCII whitespace str.split() splits on (\t \n \v \f \r, space,
# \x1c-\x1f); and each byte lower-cased if it is an ASCII capital
SEPARATOR = np.zeros(256, np.bool_)
SEPARATOR[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
LOWER = np.arange(256, dtype=np.uint8)
LOWER[65:91] += 32
RAW_LIMIT = 0x32400  #: code points the lower-casing table of the fused pass covers
