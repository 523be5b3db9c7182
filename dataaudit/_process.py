"""Settings of a process dataaudit owns (the command line, the parallel engine's workers)."""

from __future__ import annotations

import gc
import os

_collection_deferred = False


def reuse_freed_memory() -> bool:
    """glibc returns freed memory above a threshold to the system (large blocks are their own
    mappings; the heap's top is trimmed), and each batch's arrays then fault in fresh zeroed
    pages again, an expensive kernel path on virtual machines. Keeping blocks up to 32 MB in the
    heap and not trimming it lets the next batch reuse them: a 40k-document DUP002 audit took a
    third fewer page faults, 0.14-0.2 fewer CPU-s and 40-50 MB more peak RSS (200k documents:
    0.3 fewer CPU-s). Set in dataaudit's own processes only, the command line's and the
    parallel engine's workers (a library does not set its host's allocator). Whether glibc took
    both settings."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (AttributeError, ValueError, OSError):  # not glibc
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    took = mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest (HEAP_MAX / 2 on 64-bit)
    return bool(took) and bool(mallopt(m_trim_threshold, (1 << 31) - 1))


def arrow_in_jemalloc() -> str | None:
    """Arrow's memory from jemalloc, in dataaudit's own processes (the command line's, the
    parallel engine's workers), unless ``ARROW_DEFAULT_MEMORY_POOL`` names a pool. pyarrow's
    default, mimalloc, reserves a 1 GB arena advised for transparent huge pages: each 2 MB
    page it first touches is zeroed whole, after the kernel compacts memory to find one when
    it is fragmented (on this VM, after the machine idled: up to 0.1 s more of a 40k-document
    DUP002 audit in the kernel), and it hands freed pages back within ~10 ms, which the next
    block's parse faults in again. Measured with jemalloc (16 alternating runs each): 40k
    documents 0.725 -> 0.670 s median, peak RSS 252 -> 201 MB; 200k 2.42 -> 2.33 s, 294 -> 247
    MB; the default pack on 1M rows 51.9-54.1 s for 51.0 s, peak 1.74-1.85 GB for 1.91 GB.
    (The system allocator, which ``reuse_freed_memory`` tunes, measured 0.680 s at 40k but
    2.1 GB at 1M rows.) The pool's name, or None where the user chose one or pyarrow was built
    without jemalloc."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return None
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # not in this build of pyarrow: its default stays
        return None
    pa.set_memory_pool(pool)
    return pool.backend_name


def defer_collection() -> None:
    """Python's cyclic garbage collector walks every object the imports create, again and again
    as they grow: numpy, pyarrow and numba's modules cost a 200-document audit ~30 collections
    of the young generations and one full one, 0.03-0.07 s, while none of those objects is
    garbage. Off until :func:`resume_collection` (after the scan's first batch, which loads the
    compiled kernels), in the command line's process only: a library does not switch off its
    host's collector. 40k-document DUP002 audit: 0.07 -> 0.006 s collecting."""
    global _collection_deferred
    if gc.isenabled():
        gc.disable()
        _collection_deferred = True


def resume_collection() -> None:
    """The collector back on, with what start-up made moved out of its reach (``gc.freeze``:
    modules, functions, compiled kernels live as long as the process), so the scan's
    collections walk only the scan's objects. Nothing to do unless :func:`defer_collection`
    switched it off."""
    global _collection_deferred
    if _collection_deferred:
        _collection_deferred = False
        gc.freeze()
        gc.enable()
