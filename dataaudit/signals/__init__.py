"""Training signals: a training log read against the data it trained on.

``dataaudit.signals(log, data, ...)`` (``dataaudit signals LOG --data DATA``) reads the log
(:mod:`.log`), finds spikes, non-finite values, clipping, schedule anomalies, divergence and
plateaus (:mod:`.detect`), maps each spike step to its rows when the sample order is known
(:mod:`.order`) and compares that batch with the corpus, reusing the audit's row flags
(:mod:`.batches`). Findings have SIG codes:

- SIG001 loss spike (with the gradient norm when both spiked), SIG002 gradient-norm spike
- SIG003 non-finite values (NaN/inf) in a logged metric
- SIG004 most steps clipped (needs max_grad_norm)
- SIG005 learning-rate schedule: zero in mid-run, a jump, no warm-up
- SIG006 train/validation divergence (where overfitting starts)
- SIG007 loss plateau
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["signals"]


def signals(*args: Any, **kwargs: Any) -> Any:
    """Read a training log against the data it trained on: see :func:`dataaudit.signals.api.signals`."""
    from .api import signals as run

    return run(*args, **kwargs)


class _Callable(types.ModuleType):
    """Importing a submodule (dataaudit.signals.api) binds ``dataaudit.signals`` to this
    package, over the public function of the same name: calling the package calls it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return signals(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable
