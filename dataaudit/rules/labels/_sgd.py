"""The label probe's one-vs-rest logistic-loss SGD, compiled (numba).

Why compiled: the probe's fold fits were most of LBL002's finish (5 folds x 60 classes x ~10
epochs over 40k sparse rows: 42-48 of its 55-57 CPU seconds at 1M rows). scikit-learn's loop
spends ~460 ns per row and epoch on 28 non-zeros, much of it in per-row virtual calls (dataset,
loss, weight vector) and in waiting for the next random row; this one inlines the calls,
prefetches the rows ahead, and renames the columns most-frequent-first so the weights every row
touches share cache lines. One fold's 60 fits on the 1M-row bench's sample, one thread, CPU
seconds at load 11 on 2 cores: scikit-learn 9.2, this 3.8.

Same numbers: it performs scikit-learn's ``SGDClassifier(loss="log_loss", penalty="l2",
learning_rate="optimal")`` updates on CSR rows (``_plain_sgd`` with a ``CSRDataset``) in the same
order with the same floating-point operations: the same seeds per class (``randint`` of the
estimator's ``random_state``, then of each class's), the same xorshift Fisher-Yates shuffle
re-applied every epoch, the scaled weight vector with its partial squared norm in the
objective, the sparse intercept decay (0.01), the stopping rule (``tol``, ``n_iter_no_change``).
So the coefficients, and the probabilities (``predict_proba``, OvR normalization), are
bit-identical to scikit-learn's (1.9; ``tests/rules/labels/test_sgd.py`` fails if a release
changes its updates), and LBL002's reports are unchanged.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ...sketches.kernels import kernel, numba

MAX_INT = np.iinfo(np.int32).max  # scikit-learn's bound for its per-class seeds
SPARSE_INTERCEPT_DECAY = 0.01  # scikit-learn's intercept step factor on sparse input
RESET_WSCALE = 1e-9  # below this scale the weights are rescaled (scikit-learn's, float64)
MAX_DLOSS = 1e12
AHEAD = 2  # rows ahead whose entries are prefetched


@numba.extending.intrinsic
def _prefetch(typingctx: Any, array: Any, index: Any) -> Any:
    """Ask the CPU to bring ``array[index]`` into cache (``llvm.prefetch``, read, keep): the
    next rows of a shuffled pass are random reads; fetched ahead, they arrive while the current
    row is worked on (2x faster fits on a machine whose cache other processes share)."""
    from llvmlite import binding, ir
    from numba.core import cgutils

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ty = signature.args[0]
        arr = context.make_array(ty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, ty, arr, [args[1]], wraparound=False)
        byte = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        name = "llvm.prefetch.p0" if binding.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte.type, i32, i32, i32]), name
        )
        builder.call(fn, [byte, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return numba.types.void(array, index), codegen


@kernel(inline="always")
def _log1pexp(x: float) -> float:
    if x <= -37:
        return math.exp(x)
    elif x <= -2:
        return math.log1p(math.exp(x))
    elif x <= 18:
        return math.log(1.0 + math.exp(x))
    elif x <= 33.3:
        return x + math.exp(-x)
    return x


@kernel(inline="always")
def _gradient(y: float, raw: float) -> float:
    if raw > -37:
        e = math.exp(-raw)
        return ((1 - y) - y * e) / (1 + e)
    return math.exp(raw) - y


@kernel()
def _fit_binary(
    data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    alpha: float,
    optimal_init: float,
    tol: float,
    n_iter_no_change: int,
    max_iter: int,
    seed: int,
) -> tuple[float, int, bool]:
    """Fit ``w`` (zeros, updated in place) on rows with targets ``y`` in {0, 1}; returns the
    intercept, the epochs run and whether the weights stayed finite."""
    n = y.shape[0]
    order = np.arange(n, dtype=np.int64)
    wscale = 1.0
    sq_norm = 0.0
    intercept = 0.0
    t = 1.0
    best = np.inf
    stale = 0
    epochs = 0
    finite = True
    for _ in range(max_iter):
        epochs += 1
        objective = 0.0
        # Fisher-Yates with scikit-learn's xorshift (our_rand_r), the same seed every epoch
        s = np.uint64(seed)
        if s == 0:
            s = np.uint64(1)
        for i in range(n - 1):
            s ^= (s << np.uint64(13)) & np.uint64(0xFFFFFFFF)
            s ^= s >> np.uint64(17)
            s ^= (s << np.uint64(5)) & np.uint64(0xFFFFFFFF)
            j = i + np.int64((s % np.uint64(2147483648)) % np.uint64(n - i))
            order[i], order[j] = order[j], order[i]
        for k in range(n):
            if k + AHEAD < n:  # the entries of a row two ahead (8 floats, 16 ints a line)
                ahead = order[k + AHEAD]
                for q in range(indptr[ahead], indptr[ahead + 1], 8):
                    _prefetch(data, q)
                for q in range(indptr[ahead], indptr[ahead + 1], 16):
                    _prefetch(indices, q)
            if k + 1 < n:  # and the weights of the next one (its entries came last round)
                ahead = order[k + 1]
                for q in range(indptr[ahead], indptr[ahead + 1]):
                    _prefetch(w, indices[q])
            row = order[k]
            lo = indptr[row]
            hi = indptr[row + 1]
            target = y[row]
            inner = 0.0
            for q in range(lo, hi):
                inner += w[indices[q]] * data[q]
            inner *= wscale
            p = inner + intercept
            eta = 1.0 / (alpha * (optimal_init + t - 1))
            objective += _log1pexp(p) - target * p
            norm = math.sqrt(sq_norm)
            objective += alpha * (0.5 * (norm * norm))
            dloss = _gradient(target, p)
            if dloss < -MAX_DLOSS:
                dloss = -MAX_DLOSS
            elif dloss > MAX_DLOSS:
                dloss = MAX_DLOSS
            update = -eta * dloss
            c = 1.0 - (eta * alpha)
            if not c > 0:
                c = 0.0
            wscale *= c
            sq_norm *= c * c
            if wscale < RESET_WSCALE:
                for f in range(w.shape[0]):
                    w[f] *= wscale
                wscale = 1.0
            if update != 0.0:
                acc = 0.0
                step = update / wscale
                for q in range(lo, hi):
                    f = indices[q]
                    w[f] += data[q] * step
                    acc += w[f] * w[f]
                sq_norm = acc * (wscale * wscale)
                intercept += update * SPARSE_INTERCEPT_DECAY
            t += 1
        if not math.isfinite(intercept) or not np.all(np.isfinite(w)):
            finite = False
            break
        mean = objective / n
        if mean > best - tol:
            stale += 1
        else:
            stale = 0
        if mean < best:
            best = mean
        if stale >= n_iter_no_change:
            break
    for f in range(w.shape[0]):
        w[f] *= wscale
    return intercept, epochs, finite


class OvRLogistic:
    """``SGDClassifier(loss="log_loss", alpha=alpha, random_state=seed)`` fitted on sparse rows:
    ``classes_``, ``coef_`` (classes x features, column-major: predict reads it in place),
    ``intercept_`` and ``n_iter_`` as scikit-learn sets them, one class per thread."""

    def __init__(self, alpha: float = 1e-5, seed: int = 0, threads: int = 1):
        self.alpha = alpha
        self.seed = seed
        self.threads = threads
        self.tol = 1e-3
        self.n_iter_no_change = 5
        self.max_iter = 1000

    def fit(self, x: Any, y: np.ndarray) -> OvRLogistic:
        x = x.tocsr()
        data = np.ascontiguousarray(x.data, np.float64)
        indptr = np.ascontiguousarray(x.indptr, np.int64)
        # the columns the rows use, most frequent first: the weights every row touches sit
        # together in cache (1.5x faster fits). A row's entries keep their order, so each dot
        # product sums the same terms in the same order: the same numbers, columns renamed.
        freq = np.bincount(x.indices, minlength=x.shape[1])
        used = np.flatnonzero(freq)
        hot = used[np.argsort(-freq[used], kind="stable")]
        rank = np.zeros(x.shape[1], np.int32)
        rank[hot] = np.arange(hot.size, dtype=np.int32)
        indices = rank[x.indices]
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"the probe needs at least 2 classes to fit, got {k}")
        typw = math.sqrt(1.0 / math.sqrt(self.alpha))
        # eta at the first row: typw / max(1, |gradient at -typw|), as scikit-learn sets it
        optimal_init = 1.0 / (typw / max(1.0, _gradient(1.0, -typw)) * self.alpha)
        if k == 2:  # one model for the second class (scikit-learn's binary case)
            positives, seeds = [self.classes_[1]], [self.seed]
        else:
            positives = list(self.classes_)
            seeds = np.random.RandomState(self.seed).randint(MAX_INT, size=k).tolist()
        local = np.zeros((len(positives), hot.size))

        def one(i: int) -> tuple[float, int, bool]:
            rng = np.random.RandomState(seeds[i])
            rng.randint(1, MAX_INT)  # the dataset's own seed (unused by an epoch's pass)
            shuffle_seed = int(rng.randint(MAX_INT))
            target = (y == positives[i]).astype(np.float64)
            return _fit_binary(
                data,
                indices,
                indptr,
                target,
                local[i],
                float(self.alpha),
                optimal_init,
                float(self.tol),
                int(self.n_iter_no_change),
                int(self.max_iter),
                shuffle_seed,
            )

        if self.threads > 1 and len(positives) > 1:
            with ThreadPoolExecutor(self.threads) as pool:
                out = list(pool.map(one, range(len(positives))))
        else:
            out = [one(i) for i in range(len(positives))]
        if not all(ok for _, _, ok in out):
            raise ValueError(
                "the label probe's SGD diverged (non-finite weights); its features are "
                "l2-normalized tf-idf, so this is a bug: please report it"
            )
        # classes x features, column-major: predict's x @ coef_.T reads it in place (row-major,
        # scipy would copy all of it, 130 MB for 60 classes, on every call)
        coef = np.zeros((x.shape[1], len(positives)))
        coef[hot] = local.T  # whole rows: 3x faster than columns (no contiguous copy: 66 MB)
        local = None  # freed before predict's arrays are made
        self.coef_ = coef.T
        self.intercept_ = np.array([b for b, _, _ in out], np.float64)
        self.n_iter_ = max(e for _, e, _ in out)
        return self

    def decision_function(self, x: Any) -> np.ndarray:
        scores = x @ self.coef_.T + self.intercept_
        return scores.reshape(-1) if scores.shape[1] == 1 else scores

    def predict_proba(self, x: Any) -> np.ndarray:
        """scikit-learn's ``_predict_proba_lr``: the sigmoid of each class's score, normalized
        over the classes (a binary model: [1 - p, p])."""
        from scipy.special import expit

        prob = self.decision_function(x)
        expit(prob, out=prob)
        if prob.ndim == 1:
            return np.stack([1 - prob, prob], axis=1)
        total = prob.sum(axis=1)
        zero = total == 0
        if zero.any():
            prob[zero, :] = 1
            total[zero] = prob.shape[1]
        prob /= total.reshape((prob.shape[0], -1))
        return prob
