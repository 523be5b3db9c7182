"""JSON Lines and JSON arrays → Arrow record batches.

JSON Lines are read in newline-aligned blocks by pyarrow's parser; a block it rejects is read line
by line in Python, which finds the exact bad line for the message and keeps mixed-type values.
Before either parser sees a block, lines nested deeper than ``MAX_DEPTH`` are caught: pyarrow's
parser crashes the process (segfault) somewhere past 5,000 levels and Python's raises
RecursionError near 1,000; no real record nests that deep.

A line that cannot be read is an error naming the file and line (the default: a gate must not
pass on data it did not read), or, with ``on_bad_lines="skip"``, skipped and noted in the input
log, which INPUT001 reports line by line.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import re
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .._compute import cast
from ..errors import InputError
from ..rule import Severity
from .location import is_remote, open_binary, size_of
from .notes import InputLog
from .records import (
    SURROGATES_REPLACED,
    iter_records,
    python_type,
    record_keys,
    records_to_batch,
    replace_surrogates,
)
from .text import not_utf8

__all__ = [
    "BAD_LINE_POLICIES",
    "MAX_DEPTH",
    "first_record",
    "iter_json",
    "iter_jsonl",
    "json_schema",
    "jsonl_schema",
]

MAX_DEPTH = 256
BLOCK_BYTES = 8 << 20  # JSON Lines are parsed in blocks of about this size
#: but a file's first block, which the corpus reads to type its columns before the scan, on the
#: one core nothing else uses yet (the next blocks are parsed on a thread): 8 MB took ~30 ms to
#: read, check and parse. 40k DUP002, 24 alternating pairs: 0.653 -> 0.638 s median (2 MB
#: 0.633, 1 MB 0.639); the first block still types the columns from thousands of rows
FIRST_BLOCK_BYTES = 4 << 20
_MAX_BLOCK = (1 << 31) - 1  # pyarrow's block_size is an int32
BAD_LINE_POLICIES = ("error", "skip")
_BOM = b"\xef\xbb\xbf"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _BadLines:
    """Raise on a bad line, or skip it and note it, as the user asked."""

    def __init__(self, path: Path, policy: str, log: InputLog | None):
        if policy not in BAD_LINE_POLICIES:
            raise InputError(f"on_bad_lines={policy!r}: use one of {', '.join(BAD_LINE_POLICIES)}.")
        self.path, self.policy, self.log = path, policy, log

    def __call__(self, where: str, problem: str, fix: str) -> None:
        """``where``: "12" (a line) or "element 3" (of a JSON array)."""
        place = f"{self.path}:{where}" if where.isdigit() else f"{self.path} {where}"
        if self.policy == "error":
            raise InputError(
                f"{place}: {problem}. {fix} (or pass on_bad_lines='skip' / "
                "--on-bad-lines skip to skip such records and list them in the report)."
            )
        if self.log is not None:
            self.log.add(
                "skipped_line",
                Severity.WARN,
                "{count} records could not be read and were skipped (on_bad_lines=skip)",
                place=f"{place}: {problem}",
            )


def _line_depth(line: bytes) -> int:
    """Deepest [ / { nesting of one JSON line, ignoring brackets inside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


#: every byte but "[", "{" and newline, which ``bytes.translate`` deletes
_NOT_OPEN_OR_NEWLINE = bytes(b for b in range(256) if b not in b"[{\n")


def _line_opens(block: bytes) -> tuple[int, int] | None:
    """(the most opening brackets on one line, the newlines) of ``block`` from a compiled pass
    (8 bytes at a time, ~1 ms per 8 MB block, without the GIL), when a rule already runs the
    compiled kernels in this process (from their files, or numba, which then writes this
    kernel's file too); else None (``bytes.translate`` below: ~3-4 ms a block, holding the
    GIL, on the reader's thread)."""
    native = sys.modules.get("dataaudit.sketches.native")  # not imported for the reader alone
    # this runs on the reader's thread: the scan's may be importing the module right now, and
    # a module being initialized may not have defined what this calls yet
    spec = getattr(native, "__spec__", None)
    if native is None or getattr(spec, "_initializing", False) or not native.running():
        return None
    args = (np.frombuffer(block, np.uint8), np.zeros(2, np.int64))
    done, out = native.line_opens.from_file(*args)
    if not done and "dataaudit.sketches.kernels" in sys.modules:  # numba is here already
        done, out = True, native.line_opens(*args)
    return (int(out[0]), int(out[1])) if done else None


def _too_deep(block: bytes) -> tuple[list[tuple[int, int]], int]:
    """(line index in block, depth) of lines nested deeper than MAX_DEPTH, and the number of
    newlines in the block.

    Opening brackets per line bound the depth from above: deleting every other byte but the
    newlines (one C pass, GB/s) leaves them per line, and only lines with more than MAX_DEPTH of
    them (rare) are scanned exactly. A few ms per 8 MB block, against ~15-30 ms for pyarrow's
    parse of it.
    """
    bound = _line_opens(block)
    if bound is not None and bound[0] <= MAX_DEPTH:
        return [], bound[1]
    marks = block.translate(None, _NOT_OPEN_OR_NEWLINE)
    newlines = marks.count(b"\n")
    if len(marks) - newlines <= MAX_DEPTH:
        return [], newlines
    # brackets per line: the gaps between the newlines of ``marks`` (a few bytes per line)
    ends = np.flatnonzero(np.frombuffer(marks, np.uint8) == 0x0A)
    bounds = np.concatenate([[-1], ends, [len(marks)]])
    if int(np.diff(bounds).max()) - 1 <= MAX_DEPTH:
        return [], newlines
    per_line = marks.split(b"\n")
    lines = block.split(b"\n")
    out = []
    for i, opens in enumerate(per_line):
        if len(opens) > MAX_DEPTH:
            depth = _line_depth(lines[i])
            if depth > MAX_DEPTH:
                out.append((i, depth))
    return out, newlines


def _valid(table: pa.Table) -> bool:
    """Cheap structural validation (offsets against lengths: microseconds)."""
    try:
        table.validate()
    except pa.ArrowInvalid:
        return False
    return True


def _bad_utf8(block: bytes) -> int | None:
    """Where the first byte that is not UTF-8 is, or None: pyarrow's JSON parser lets invalid
    UTF-8 through into string columns, so it is refused before.

    ASCII is checked at memory speed; other text by Arrow's UTF-8 validation (~3x Python's
    decode, which builds a str); Python's decoder then finds the byte for the message.
    """
    if block.isascii():
        return None
    buffers = [None, pa.py_buffer(np.array([0, len(block)], np.int64)), pa.py_buffer(block)]
    try:
        cast(pa.Array.from_buffers(pa.large_binary(), 1, buffers), pa.large_string())
        return None
    except pa.ArrowInvalid:
        pass
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _check_utf8(path: Path, block: bytes, first_line: int, at: int | None) -> None:
    """Raise the message for the byte at ``at`` of ``block`` that is not UTF-8
    (:func:`_bad_utf8`; None: nothing to raise)."""
    if at is not None:
        line = first_line + block.count(b"\n", 0, at) + 1
        raise not_utf8(path, line, block[at]) from None


@dataclasses.dataclass
class _Checked:
    """A block's checks and parse, done on the reader's thread: where its first byte that is
    not UTF-8 is, its lines nested too deep, its newlines, and pyarrow's table (None: not
    parsed, or rejected)."""

    bad_utf8: int | None
    deep: list[tuple[int, int]]
    newlines: int
    table: pa.Table | None


def _check_and_parse(block: bytes, schema: pa.Schema | None) -> _Checked:
    """The UTF-8 and depth checks and pyarrow's parse of one block, in that order, for the
    reader's thread: off the scan's thread, they run while the rules read the block before."""
    at = _bad_utf8(block)
    if at is not None:
        return _Checked(at, [], 0, None)
    deep, newlines = _too_deep(block)
    return _Checked(None, deep, newlines, None if deep else _parse(block, schema))


def _rebatch(table: pa.Table, batch_size: int) -> Iterator[pa.RecordBatch]:
    """A parsed block in batches of ``batch_size`` rows. Batches cannot span chunks: a table of
    several (pyarrow's parse of 1 MB chunks, as _parse did before it took whole blocks) made
    an 8 MB block of short texts 8 batches of 8,192 rows and 8 of a few hundred, each paying
    every rule's per-batch cost. Combining the chunks copies the block's columns once."""
    if table.num_columns and table.column(0).num_chunks > 1:
        table = table.combine_chunks()
    for rb in table.to_batches(max_chunksize=batch_size):
        if rb.num_rows:
            yield rb


@dataclasses.dataclass
class _Resume:
    """Where a reader stood after parsing a file's first block, and that block."""

    key: tuple[Any, ...]
    consumed: int  # bytes read from the (decompressed) stream
    tail: bytes  # read but not yet parsed: the start of the next block
    line_no: int  # lines before the next block
    table: pa.Table | None


#: the first block of the last file a reader stopped reading early: the corpus reads a file's
#: first batch to type its columns, then streams the file from its start; the stream takes
#: the parsed block from here instead of parsing it again (8 MB, ~30 ms of pyarrow plus the
#: UTF-8 and depth checks). One entry; only blocks pyarrow parsed (no bad line in them).
_PEEKED: list[_Resume] = []


def _file_key(path: Path, block_bytes: int) -> tuple[Any, ...] | None:
    if is_remote(path):
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_size, st.st_mtime_ns, block_bytes)


def _resume(key: tuple[Any, ...] | None) -> _Resume | None:
    if key is None or not _PEEKED or _PEEKED[0].key != key:
        return None
    return _PEEKED.pop()


def _skip(fh: Any, n: int) -> None:
    if fh.seekable():
        fh.seek(n)
        return
    while n > 0:  # a compressed stream: decompress and drop
        got = len(fh.read(min(n, 1 << 20)))
        if not got:
            break
        n -= got


#: the reader's thread runs at this nice value (Linux): lower than the scan's, so that on a
#: busy machine the compiled passes over the batch in hand (two threads on two cores) run
#: first and the next block is parsed in the gaps between them. 40k documents, DUP002, 16
#: alternating pairs: 1.051 -> 0.983 s median wall (200k: 3.11 -> 2.90 s)
READER_NICE = 19
#: seconds the scan waits for a lowered reader before it parses the block itself and reads on
#: at its own priority: other processes may keep a niced thread from the cores for long. While
#: the scan waits its own threads are idle, so a reader that is not starved has the cores and
#: finishes an 8 MB block in well under this (its whole parse: 20-60 ms here). With both cores
#: taken by two other processes the first wait costs this and one parse twice, once.
READER_PATIENCE = 0.1
#: a wait for a lowered reader longer than this (it usually has the block ready) and the next
#: blocks go to a reader at the scan's priority
READER_LAG = 0.02
#: blocks handed to the reader behind the one whose batches the rules read. With one, a
#: reader that finished the next block early idled until the rules asked for it, while the
#: scan's thread worked alone on its rules (a quarter of the scan's two cores idle at 40k
#: documents): 40k DUP002, 20 alternating pairs, 0.816 -> 0.763 s median with the one-fetch
#: examples; 200k: 2.51 -> 2.31 s, peak RSS +12 MB. Three measured as two
READ_AHEAD = 2


def _lower_priority() -> None:
    """Give the calling thread (the reader's) the nice value :data:`READER_NICE`."""
    import os
    import threading

    with contextlib.suppress(AttributeError, OSError):  # no per-thread priority: as it was
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), READER_NICE)


def _cores_free(loadavg: str = "/proc/loadavg") -> bool:
    """Whether no more threads are running or waiting to run on this machine than it has
    cores (``/proc/loadavg``'s instant count, this one's included): a lowered reader then
    runs in the gaps between the scan's own threads, not behind other processes."""
    import os

    try:
        with open(loadavg, "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return False
    return running <= (os.cpu_count() or 1)


def _reader_pool(lowered: bool) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    # per-thread nice values are Linux's; elsewhere PRIO_PROCESS would lower the whole process
    lowered = lowered and READER_NICE > 0 and sys.platform.startswith("linux") and _cores_free()
    start = _lower_priority if lowered else None
    pool = ThreadPoolExecutor(1, thread_name_prefix="dataaudit-jsonl", initializer=start)
    pool.lowered = lowered  # type: ignore[attr-defined]
    return pool


def _read_block(fh: Any, tail: bytes, size: int) -> tuple[bytearray, int]:
    """``tail`` and up to ``size`` more bytes of ``fh`` in one new buffer, read straight into
    it: (the buffer, the bytes read; 0 at the end). Reading a block, joining it to the tail
    and cutting it at its last newline made three copies of it, on the scan's thread: on a
    40k-document file of 93 MB, 60-80 ms of a fresh process's CPU, ~45 ms read into place."""
    readinto = getattr(fh, "readinto", None)
    if readinto is None:  # a reader of whole byte ranges (the Ray engine's): its blocks whole
        chunk = fh.read(size)
        block = bytearray(tail)
        block += chunk
        return block, len(chunk)
    block = bytearray(len(tail) + size)
    block[: len(tail)] = tail
    got = len(tail)
    with memoryview(block) as view:
        while got < len(block):
            n = readinto(view[got:])
            if not n:
                break
            got += n
    del block[got:]
    return block, got - len(tail)


def _parse(block: bytes | bytearray, schema: pa.Schema | None) -> pa.Table | None:
    """pyarrow's parse of one block (None: it rejected the block; Python's parser reads it)."""
    import pyarrow.json as pj

    try:
        opts = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
        # the block as one chunk, parsed by this thread: pyarrow's threads parse 1 MB chunks
        # in parallel, which costs ~10% more CPU (the 1M-row bench file: 0.41-0.45 -> 0.37-0.40
        # CPU-s) plus combining the chunks into whole batches (_rebatch), and the reader
        # already parses the next block in a thread of its own while the rules read this one
        read = pj.ReadOptions(use_threads=False, block_size=min(len(block) + 1, _MAX_BLOCK))
        source = pa.BufferReader(pa.py_buffer(block))  # no copy (BytesIO copies a bytearray)
        table = pj.read_json(source, read_options=read, parse_options=opts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return table if _valid(table) else None  # pyarrow 26 builds invalid arrays from [null, false]


def _done(checked: _Checked) -> Any:
    """A block checked and parsed on this thread, as a done Future (the reader's are pending)."""
    from concurrent.futures import Future

    done: Future = Future()
    done.set_result(checked)
    return done


@dataclasses.dataclass
class _Block:
    """A block read and handed to the parser (checked first, here or on the reader's thread),
    waiting for its turn to be yielded."""

    parsed: Any  # a Future of its _Checked: done here (the first block), or the reader's
    block: bytes | bytearray
    after: _Resume | None = None  # where a reader stands after it (for the first block)
    lowered: bool = False  # handed to a reader below the scan's priority
    line_no: int = 0  # lines before it: set when its turn comes


def iter_jsonl(
    path: Path,
    batch_size: int,
    *,
    block_bytes: int | None = None,
    on_bad_lines: str = "error",
    log: InputLog | None = None,
    first_line: int = 0,
    schema: pa.Schema | None = None,
) -> Generator[pa.RecordBatch, None, pa.Schema | None]:
    """JSON Lines in newline-aligned blocks: pyarrow's parser, Python's on a block it rejects.

    A part of a file (the Ray engine's workers read byte ranges of one) reads as the whole
    file's reader would, given ``first_line`` (lines before it) and ``schema`` (the columns
    pyarrow typed from the file's first block it parsed, or None); returns that schema after
    the part.

    The next :data:`READ_AHEAD` blocks are checked (UTF-8, nesting) and parsed in a worker
    thread (pyarrow releases the GIL) while the rules read the batches of this one, so on two
    cores the parse hides behind the audit's own work; the first block of a stream is checked
    and parsed here.
    Blocks are yielded, checked and reported in file order, as if parsed one after another.
    """
    bad = _BadLines(path, on_bad_lines, log)
    block_bytes = block_bytes or BLOCK_BYTES
    line_no = first_line  # lines before the current block
    key = _file_key(path, block_bytes)
    peeked = _resume(key)
    first_block: _Resume | None = None  # kept if this reader is stopped early
    pool = None
    waiting: collections.deque[_Block] = collections.deque()  # read, to yield in file order
    started = peeked is not None  # a block was yielded (the peeked one counts)

    lowered = True  # the reader's thread runs below the scan's priority until it lags

    def _await(item: _Block) -> Any:
        """The block's checks and parse, done here or by the reader's thread. A lowered reader
        that keeps the scan waiting (other work holds the cores) is given up: the next blocks go
        to a reader at the scan's priority, and a block not ready in time is done here."""
        nonlocal pool, lowered
        from concurrent.futures import CancelledError
        from concurrent.futures import TimeoutError as Late

        asked = time.perf_counter()
        patience = READER_PATIENCE if lowered else 0.0  # given up already: no more waiting
        try:
            done = item.parsed.result(timeout=patience if item.lowered else None)
        except (CancelledError, Late):  # dropped with a lowered reader, or late from one
            done = None
        if lowered and item.lowered and time.perf_counter() - asked > READER_LAG:
            lowered = False
            if pool is not None:
                pool.shutdown(wait=False)
            # the blocks queued on it, not started yet, go to a reader at the scan's priority
            pool = None
            for later in waiting:
                if later.lowered and later.parsed.cancel():
                    pool = pool or _reader_pool(False)
                    later.parsed, later.lowered = (
                        pool.submit(_check_and_parse, later.block, schema),
                        False,
                    )
        return done if done is not None else _check_and_parse(item.block, schema)

    def emit(item: _Block) -> Iterator[pa.RecordBatch]:
        nonlocal schema, started, first_block, line_no
        item.line_no = line_no
        checked = _await(item)  # checked here or on the reader's thread: reported now
        if checked.bad_utf8 is not None:
            _check_utf8(path, item.block, item.line_no, checked.bad_utf8)
        table = checked.table
        line_no = item.line_no + checked.newlines  # the next block's first line
        if table is None:
            started = True
            yield from _block_python(
                path, item.block, item.line_no, batch_size, schema, dict(checked.deep), bad, log
            )
            return
        item.block = b""  # parsed: its bytes are not held while its batches are read
        if schema is None:
            schema = table.schema
        if not started and item.after is not None:
            first_block = dataclasses.replace(item.after, table=table)
        started = True
        yield from _rebatch(table, batch_size)

    with open_binary(path) as fh:
        tail = b""
        first = True
        consumed = 0
        try:
            if peeked is not None:
                _skip(fh, peeked.consumed)
                consumed, tail, line_no = peeked.consumed, peeked.tail, peeked.line_no
                schema, first = peeked.table.schema, False
                # yielded once the next block is read and handed to the parser, so that its
                # parse runs while the rules read these batches (it ran after them, alone)
                line_no = peeked.line_no  # its newlines are counted in it
                waiting.append(_Block(_done(_Checked(None, [], 0, peeked.table)), b""))
            while True:
                if waiting and schema is None:
                    # the next block's parse takes the first parsed block's schema: hand this
                    # one over first, before reading on (a peek stops after its first batch:
                    # reading and checking the next 8 MB for it was ~30 ms wasted)
                    yield from emit(waiting.popleft())
                block, got = _read_block(
                    fh, tail, min(block_bytes, FIRST_BLOCK_BYTES) if first else block_bytes
                )
                consumed += got
                if first:
                    if block.startswith(_BOM):
                        del block[: len(_BOM)]
                    first = False
                last = not got
                tail = b""
                if not last:
                    cut = block.rfind(b"\n")
                    if cut < 0:
                        tail = bytes(block)
                        continue
                    tail = bytes(block[cut + 1 :])
                    del block[cut + 1 :]  # in place: the buffer keeps its memory, no copy
                if block and not block.isspace():
                    if not waiting:  # checked and parsed here: nothing runs beside it
                        checked = _check_and_parse(block, schema)
                        _check_utf8(path, block, line_no, checked.bad_utf8)
                        after = None
                        if not started and key is not None:
                            after = _Resume(key, consumed, tail, line_no + checked.newlines, None)
                        waiting.append(_Block(_done(checked), block, after))
                    else:
                        if pool is None:
                            pool = _reader_pool(lowered)
                        task = pool.submit(_check_and_parse, block, schema)
                        waiting.append(_Block(task, block, lowered=pool.lowered))
                        # a block is yielded once READ_AHEAD more are handed to the reader
                        # behind it: the reader goes on with the next while the rules read
                        # this one, even when it finished the one before early
                        while len(waiting) > READ_AHEAD:
                            yield from emit(waiting.popleft())
                else:  # blank lines still count, after the blocks before them
                    while waiting:
                        yield from emit(waiting.popleft())
                    line_no += block.count(b"\n")
                if last:
                    break
            while waiting:
                yield from emit(waiting.popleft())
        except GeneratorExit:
            if first_block is not None:
                _PEEKED[:] = [first_block]
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
    return schema


def _block_python(
    path: Path,
    block: bytes,
    first_line: int,
    batch_size: int,
    schema: pa.Schema | None,
    deep: dict[int, int],
    bad: _BadLines,
    log: InputLog | None,
) -> Iterator[pa.RecordBatch]:
    records: list[dict[str, Any]] = []

    for i, raw in enumerate(block.split(b"\n")):
        if not raw.strip():
            continue
        line = first_line + i + 1
        if i in deep:
            bad(
                str(line),
                f"nested {deep[i]:,} levels deep (dataaudit reads up to {MAX_DEPTH})",
                "Such nesting is almost certainly damage; fix or remove that line",
            )
            continue
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            shown = raw[:80].decode("utf-8", "replace")
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            bad(
                str(line),
                f"not valid JSON ({problem}); the line starts with {shown!r}",
                "Fix or remove that line; each line of a .jsonl file must be one JSON object",
            )
            continue
        if not isinstance(rec, dict):
            bad(
                str(line),
                f"expected a JSON object per line, got {python_type(rec)}",
                'Wrap each record as {"text": ...}',
            )
            continue
        if _SURROGATE_ESCAPE.search(raw):
            rec, n = replace_surrogates(rec)  # valid pairs were joined by json; lone ones remain
            if n and log is not None:
                log.add(
                    "surrogates",
                    Severity.INFO,
                    SURROGATES_REPLACED,
                    count=n,
                    place=f"{path}:{line}",
                )
        records.append(rec)
    # every batch of the block has every key of the block, as pyarrow's parser gives them
    names = record_keys(records)
    for start in range(0, len(records), batch_size):
        yield records_to_batch(records[start : start + batch_size], schema, names=names)


def read_in_one_block(path: Path) -> bool:
    """Whether the first block holds the whole file, so its first batch has every column."""
    try:
        return path.suffix.lower() not in (".gz", ".bz2", ".zst") and (
            (size_of(path) or FIRST_BLOCK_BYTES + 1) <= min(BLOCK_BYTES, FIRST_BLOCK_BYTES)
        )
    except OSError:
        return False


def first_record(path: Path) -> dict[str, Any] | None:
    """The first JSON object of a JSON Lines file (read alone: its keys name columns cheaply);
    None when the first line is not one (the full read reports it)."""
    with open_binary(path) as fh:  # compressed streams have no readline: read blocks
        buffer = b""
        while True:
            chunk = fh.read(1 << 16)
            buffer += chunk
            lines = buffer.removeprefix(_BOM).split(b"\n")
            complete = lines if not chunk else lines[:-1]
            for raw in complete:
                if raw.strip():
                    try:
                        rec = json.loads(raw)
                    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                        return None
                    return rec if isinstance(rec, dict) else None
            if not chunk:
                return None
            buffer = lines[-1] if len(lines[-1]) < (64 << 20) else b""
    return None


def jsonl_schema(path: Path) -> tuple[pa.Schema | None, bool]:
    """The columns of the first record (cheap, not whole: a later record may add a key);
    (None, False) when the first line is not a record (the read reports it)."""
    rec = first_record(path)
    if rec is None:
        return None, False
    return _scalar_schema(rec) or records_to_batch([rec]).schema, False


_SCALARS = {str: pa.string(), bool: pa.bool_(), float: pa.float64(), type(None): pa.null()}


def _scalar_schema(rec: dict[str, Any]) -> pa.Schema | None:
    """The schema ``records_to_batch([rec])`` gives a record of strings, numbers, booleans and
    nulls, without building it: pyarrow's ``pa.array`` imports pandas (when installed) on first
    use, 0.35-0.7 s of a run that otherwise never needs it. None for other records."""
    fields = []
    for key, value in rec.items():
        kind = _SCALARS.get(type(value))
        if kind is None:
            if type(value) is not int or not -(1 << 63) <= value < (1 << 63):
                return None
            kind = pa.int64()
        if not key.isascii():
            return None  # a lone surrogate in a key: the records path repairs or reports it
        fields.append(pa.field(key, kind))
    return pa.schema(fields)


def json_schema(path: Path) -> tuple[pa.Schema | None, bool]:
    """A .json file: an array of records tells its columns only when read; one object (or JSON
    Lines under a .json name) is peeked as JSON Lines."""
    if starts_with_array(path):
        return None, False
    return jsonl_schema(path)


def starts_with_array(path: Path) -> bool:
    """Whether a .json file holds a top-level array (else one object, or JSON Lines)."""
    with open_binary(path) as fh:
        head = fh.read(1 << 16).lstrip(_BOM + b" \t\r\n")
    return head.startswith(b"[")


def iter_json(
    path: Path,
    batch_size: int,
    *,
    on_bad_lines: str = "error",
    log: InputLog | None = None,
) -> Iterator[pa.RecordBatch]:
    """A .json file holding one array of objects (or JSON Lines under a .json name)."""
    if not starts_with_array(path):
        yield from iter_jsonl(path, batch_size, on_bad_lines=on_bad_lines, log=log)
        return
    with open_binary(path) as fh:
        raw = fh.read()
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    _check_utf8(path, raw, 0, _bad_utf8(raw))
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}).") from None
    except RecursionError:
        raise InputError(
            f"{path}: nested too deeply to read (more than ~{MAX_DEPTH} levels); such nesting is "
            "almost certainly damage."
        ) from None
    if not isinstance(data, list):
        raise InputError(
            f"{path}: expected a top-level array of objects (or JSON Lines), got "
            f"{python_type(data)}."
        )
    bad = _BadLines(path, on_bad_lines, log)
    kept = []
    for i, rec in enumerate(data):
        if isinstance(rec, dict):
            kept.append(rec)
        else:
            bad(
                f"element {i}",
                f"the top-level array holds a {python_type(rec)} here, not a record object",
                "Each element must be one record object",
            )
    del data

    def repaired(n: int) -> None:
        if log is not None:
            log.add(
                "surrogates",
                Severity.INFO,
                SURROGATES_REPLACED,
                count=n,
                place=str(path),
            )

    yield from iter_records(kept, batch_size, on_repair=repaired)
