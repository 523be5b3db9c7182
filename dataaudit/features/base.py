"""The Batch a rule sees, and the registry of shared features."""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..resources import Resources
from ..rule import TYPE_MARKER_PREFIX

if TYPE_CHECKING:
    from ..rule import Roles

FeatureFn = Callable[..., Any]
_FEATURES: dict[str, FeatureFn] = {}
# features that live in modules imported only when first asked for (heavy dependencies)
_LAZY_FEATURES: dict[str, str] = {}


def register_feature(name: str) -> Callable[[FeatureFn], FeatureFn]:
    def deco(fn: FeatureFn) -> FeatureFn:
        if name in _FEATURES and _FEATURES[name] is not fn:
            raise ValueError(f"feature {name!r} is registered twice")
        _FEATURES[name] = fn
        return fn

    return deco


def register_lazy_feature(name: str, module: str) -> None:
    """Name a feature whose module is imported on first use (keeps `import dataaudit` fast)."""
    _LAZY_FEATURES[name] = module


def feature_names() -> list[str]:
    return sorted(set(_FEATURES) | set(_LAZY_FEATURES))


@cache
def _defaults(fn: FeatureFn) -> dict[str, Any]:
    params = list(inspect.signature(fn).parameters.values())[1:]  # after the batch
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


class Batch:
    """One record batch of one split, with lazily computed, cached features.

    ``row_ids`` are 0-based positions of the rows in their split, in input order. ``resources``
    are the audit's (``ctx.batch(...)`` passes them): features find the tokenizer there.
    """

    __slots__ = (
        "split",
        "kind",
        "offset",
        "data",
        "roles",
        "resources",
        "_cache",
        "feature_seconds",
        "_inner",
    )

    def __init__(
        self,
        split: str,
        data: pa.RecordBatch,
        offset: int,
        roles: Roles,
        kind: str = "train",
        resources: Resources | None = None,
    ):
        #: seconds spent computing each feature for this batch (its own time: features it
        #: asked for are counted under their own names); the engine reports the sums
        self.feature_seconds: dict[str, float] = {}
        self._inner: list[float] = []  # time of features computed inside the running one
        self.split = split
        self.kind = kind
        self.offset = offset
        self.data = data
        self.roles = roles
        self.resources = resources if resources is not None else Resources()
        self._cache: dict[Any, Any] = {}

    @property
    def num_rows(self) -> int:
        return self.data.num_rows

    @property
    def row_ids(self) -> np.ndarray:
        return np.arange(self.offset, self.offset + self.data.num_rows, dtype=np.int64)

    def has_column(self, name: str | None) -> bool:
        return name is not None and self.data.schema.get_field_index(name) >= 0

    def column(self, name: str) -> pa.Array:
        idx = self.data.schema.get_field_index(name)
        if idx < 0:
            raise KeyError(name)
        return self.data.column(idx)

    def role(self, role: str) -> pa.Array | None:
        name = getattr(self.roles, role, None)
        return self.column(name) if self.has_column(name) else None

    def type_markers(self, column: str) -> pa.Array | None:
        """Original JSON type of values the reader had to keep as text (see readers)."""
        name = TYPE_MARKER_PREFIX + column
        return self.column(name) if self.has_column(name) else None

    def feature(self, name: str, **params: Any) -> Any:
        fn = _FEATURES.get(name)
        if fn is None and name in _LAZY_FEATURES:
            importlib.import_module(_LAZY_FEATURES[name])
            fn = _FEATURES.get(name)
        if fn is None:
            raise KeyError(f"unknown feature {name!r}; known: {', '.join(feature_names())}")
        key = self._key(name, fn, params)
        if key not in self._cache:
            t0 = time.perf_counter()
            self._inner.append(0.0)
            try:
                self._cache[key] = fn(self, **params)
            finally:
                inner = self._inner.pop()
                elapsed = time.perf_counter() - t0
                self.feature_seconds[name] = self.feature_seconds.get(name, 0.0) + elapsed - inner
                if self._inner:
                    self._inner[-1] += elapsed
        return self._cache[key]

    @property
    def features_total(self) -> float:
        return sum(self.feature_seconds.values())

    def cached(self, name: str, **params: Any) -> Any:
        """The feature if something already computed it for this batch, else None (never
        computes: for features that can use a costlier one when it is there anyway)."""
        fn = _FEATURES.get(name)
        return None if fn is None else self._cache.get(self._key(name, fn, params))

    def cached_any(self, name: str) -> list[Any]:
        """Every value of the feature computed so far for this batch, whatever its parameters."""
        return [v for k, v in self._cache.items() if k[0] == name]

    @staticmethod
    def _key(name: str, fn: FeatureFn, params: dict[str, Any]) -> tuple[str, Any]:
        # defaults spelled out or not are the same request: one cache entry, one computation
        return (name, _freeze({**_defaults(fn), **params}))

    # the common ones, spelled out
    @property
    def text(self) -> pa.Array:
        """The text view: the text column, or chat / prompt+response rendered as one string."""
        return self.feature("text")

    @property
    def input_text(self) -> pa.Array:
        """What a label is predicted from: text, the prompt (+input), or chat minus the last reply."""
        return self.feature("input_text")

    @property
    def normalized(self) -> pa.Array:
        return self.feature("normalized")
