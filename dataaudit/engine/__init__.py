"""One streaming pass over the corpus feeds every selected rule.

Per batch, shared features are computed lazily once (see features/), then each rule folds the batch
into its state. A rule that raises is marked ``error`` with its message and dropped from the rest of
the pass; the other rules finish. States are mergeable, so :func:`scan_parallel` folds chunks in
worker processes and merges them exactly.

- :mod:`.state`: a rule's run and the scan's state; :func:`start`.
- :mod:`.local`: :func:`scan` (one process) and :func:`finish`.
- :mod:`.parallel`: :func:`scan_parallel` (worker processes).
- :mod:`.prepass`: a first pass over a few splits (the eval side) whose merged value every
  worker sees in the scan as ``ctx.resources.prepared(code)`` (rules with ``prepass_update``).
- :mod:`.reportable`: a rule's result must fit the report.
"""

from __future__ import annotations

from .local import finish, scan
from .parallel import scan_parallel
from .state import RULE_FAILURES, RuleRun, ScanState, start

__all__ = ["RULE_FAILURES", "RuleRun", "ScanState", "finish", "scan", "scan_parallel", "start"]
