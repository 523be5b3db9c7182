"""Conformance checks every rule passes, built-in or plugin (like scikit-learn's estimator checks).

    from dataaudit.testing import check_rule
    report = check_rule(MyRule)          # AssertionError naming every broken contract
    print(report)                        # the checks that passed, and those skipped and why

Checks: options stored verbatim (smoke values of each option's type, so coercing, clamping or
copying constructors fail); the docstring has its sections; empty input finishes;
``merge(start, s) == s`` both ways; shards merged in any grouping equal one pass (a rule with a
prepass gets its broadcast value, as the engines give it, its prepass cut the same way); a pickled
state finishes the same; ``update`` changes neither the batch nor the shared features it read
(compared field by field); ``start`` does no I/O; ``merge`` refuses states built with other
options, seeds or tokenizers (ValueError). A check that cannot apply raises
:class:`ConformanceSkip` with the reason; :func:`check_rule` reports it and warns. Give the rule
what it needs (``tokenizer=``, ``reference=``, ``contamination_ref=``, ``options=``, ``data=``)
so its data checks run on data that makes it fire.

Modules: ``_data`` (sample corpora), ``_case`` (a rule with its data and resources),
``_compare`` (field-by-field comparison), ``_io_guard`` (I/O recording), ``_checks`` (one
function per check), ``_runner`` (check_rule).
"""

from __future__ import annotations

from ._case import Case, ConformanceSkip
from ._checks import CHECKS, DOC_SECTIONS, smoke_value
from ._compare import first_difference
from ._data import sample_contamination, sample_corpus, sample_data, sample_reference
from ._io_guard import record_io
from ._runner import ConformanceReport, ConformanceSkipWarning, check_rule, rule_checks

__all__ = [
    "CHECKS",
    "DOC_SECTIONS",
    "Case",
    "ConformanceReport",
    "ConformanceSkip",
    "ConformanceSkipWarning",
    "check_rule",
    "first_difference",
    "record_io",
    "rule_checks",
    "sample_contamination",
    "sample_corpus",
    "sample_data",
    "sample_reference",
    "smoke_value",
]
