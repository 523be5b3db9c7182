"""XXH3-64 (seed 0, default secret) of many byte strings in one compiled loop.

The split content hash is xxh3_64 of each cell's UTF-8 bytes (``dataaudit.identity``): reports,
baselines and ``clean`` manifests persist it, so it must stay the ``xxhash`` package's value
exactly. Calling ``xxhash.xxh3_64_intdigest`` per row costs a Python bytes object and a call per
row (~0.16 CPU-s per million 120-byte rows); this is the same algorithm (xxHash 0.8's
``XXH3_64bits``: the 0, 1-3, 4-8, 9-16, 17-128, 129-240 byte classes and the striped long
path, scalar) over an Arrow array's offsets and bytes: ~0.03 s. Compiling it takes ~1.5 s
once per machine (cached like the other kernels).
``tests/sketches/test_xxh3.py`` checks it against ``xxhash`` on every length class.
"""

from __future__ import annotations

import numpy as np

from .kernels import kernel

__all__ = ["xxh3_64_rows"]

U64 = np.uint64

#: XXH3's default 192-byte secret (``XXH3_kSecret``)
SECRET = np.frombuffer(
    bytes.fromhex(
        "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
        "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
        "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
        "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
        "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
        "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
    ),
    np.uint8,
)
#: the secret's little-endian uint64 at every byte offset (numba freezes it as a constant)
_KEY = np.lib.stride_tricks.sliding_window_view(SECRET, 8).copy().view("<u8").ravel()

P32_1 = U64(0x9E3779B1)
P32_2 = U64(0x85EBCA77)
P32_3 = U64(0xC2B2AE3D)
P64_1 = U64(0x9E3779B185EBCA87)
P64_2 = U64(0xC2B2AE3D27D4EB4F)
P64_3 = U64(0x165667B19E3779F9)
P64_4 = U64(0x85EBCA77C2B2AE63)
P64_5 = U64(0x27D4EB2F165667C5)
MX1 = U64(0x165667919E3779F9)
MX2 = U64(0x9FB21C651E98DF25)
LO32 = U64(0xFFFFFFFF)


def _key(i: int) -> np.uint64:
    return U64(_KEY[i])


#: the secret's words the short classes mix in, folded as XXH3 folds them (seed 0)
FLIP_1TO3 = U64(int(SECRET[0:4].view("<u4")[0]) ^ int(SECRET[4:8].view("<u4")[0]))
FLIP_4TO8 = _key(8) ^ _key(16)
FLIP_9TO16_LO = _key(24) ^ _key(32)
FLIP_9TO16_HI = _key(40) ^ _key(48)
EMPTY = _key(56) ^ _key(64)
#: where in the secret the last 16 bytes of a 129-240 byte input are mixed (a variable, not a
#: literal: numba compiles a function once per literal argument value)
_LAST_KEY = np.int64(136 - 17)


@kernel()
def _r64(b, i):
    """Little-endian uint64 at byte ``i`` (unsigned indices: no negative-index wraparound
    branch, so LLVM merges the eight loads into one)."""
    j = U64(i)
    return (
        U64(b[j])
        | (U64(b[j + U64(1)]) << U64(8))
        | (U64(b[j + U64(2)]) << U64(16))
        | (U64(b[j + U64(3)]) << U64(24))
        | (U64(b[j + U64(4)]) << U64(32))
        | (U64(b[j + U64(5)]) << U64(40))
        | (U64(b[j + U64(6)]) << U64(48))
        | (U64(b[j + U64(7)]) << U64(56))
    )


@kernel()
def _r32(b, i):
    j = U64(i)
    return (
        U64(b[j])
        | (U64(b[j + U64(1)]) << U64(8))
        | (U64(b[j + U64(2)]) << U64(16))
        | (U64(b[j + U64(3)]) << U64(24))
    )


@kernel()
def _fold(a, b):
    """The 128-bit product of two uint64, its halves xored (``XXH3_mul128_fold64``)."""
    a_lo, a_hi = a & LO32, a >> U64(32)
    b_lo, b_hi = b & LO32, b >> U64(32)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    hi_hi = a_hi * b_hi
    cross = (lo_lo >> U64(32)) + (hi_lo & LO32) + lo_hi
    upper = (hi_lo >> U64(32)) + (cross >> U64(32)) + hi_hi
    lower = (cross << U64(32)) | (lo_lo & LO32)
    return lower ^ upper


@kernel()
def _avalanche(h):
    h ^= h >> U64(37)
    h *= MX1
    return h ^ (h >> U64(32))


@kernel()
def _mix16(b, i, key):
    """Bytes ``i..i+16`` mixed with the secret's bytes ``key..key+16``."""
    return _fold(_r64(b, i) ^ _KEY[key], _r64(b, i + 8) ^ _KEY[key + 8])


@kernel()
def _long(b, lo, n, acc):
    """Inputs of more than 240 bytes: 8 accumulators (``acc``, the caller's scratch) over
    64-byte stripes, scrambled per 1024-byte block by the secret's last 64 bytes."""
    acc[0], acc[1], acc[2], acc[3] = P32_3, P64_1, P64_2, P64_3
    acc[4], acc[5], acc[6], acc[7] = P64_4, P32_2, P64_5, P32_1
    stripes = (192 - 64) // 8  # per block
    block = 64 * stripes
    blocks = (n - 1) // block
    last = ((n - 1) - block * blocks) // 64
    for k in range(blocks + 1):
        count = stripes if k < blocks else last
        for m in range(count + (k == blocks)):
            at = lo + k * block + 64 * m
            key = 8 * m
            if m == count:  # the last stripe: the input's last 64 bytes
                at = lo + n - 64
                key = 192 - 64 - 7
            for q in range(8):
                value = _r64(b, at + 8 * q)
                mixed = value ^ _KEY[key + 8 * q]
                acc[q ^ 1] += value
                acc[q] += (mixed & LO32) * (mixed >> U64(32))
        if k < blocks:
            for q in range(8):  # scramble
                a = acc[q]
                a ^= a >> U64(47)
                a ^= _KEY[128 + 8 * q]
                acc[q] = a * P32_1
    h = U64(n) * P64_1
    for q in range(4):
        h += _fold(acc[2 * q] ^ _KEY[11 + 16 * q], acc[2 * q + 1] ^ _KEY[19 + 16 * q])
    return _avalanche(h)


@kernel()
def _xxh3(b, lo, n, acc):
    """XXH3_64bits of ``b[lo:lo + n]`` with seed 0 and the default secret (``acc``: 8 uint64
    of scratch for long inputs)."""
    if n <= 16:
        if n > 8:
            in_lo = _r64(b, lo) ^ FLIP_9TO16_LO
            in_hi = _r64(b, lo + n - 8) ^ FLIP_9TO16_HI
            swapped = U64(0)
            x = in_lo
            for _ in range(8):  # byte swap
                swapped = (swapped << U64(8)) | (x & U64(0xFF))
                x >>= U64(8)
            return _avalanche(U64(n) + swapped + in_hi + _fold(in_lo, in_hi))
        if n >= 4:
            keyed = (_r32(b, lo + n - 4) + (_r32(b, lo) << U64(32))) ^ FLIP_4TO8
            h = keyed ^ ((keyed << U64(49)) | (keyed >> U64(15)))
            h ^= (keyed << U64(24)) | (keyed >> U64(40))
            h *= MX2
            h ^= (h >> U64(35)) + U64(n)
            h *= MX2
            return h ^ (h >> U64(28))
        if n > 0:
            c1 = U64(b[lo])
            c2 = U64(b[lo + (n >> 1)])
            c3 = U64(b[lo + n - 1])
            h = ((c1 << U64(16)) | (c2 << U64(24)) | c3 | (U64(n) << U64(8))) ^ FLIP_1TO3
        else:
            h = EMPTY
        h ^= h >> U64(33)  # XXH64's avalanche
        h *= P64_2
        h ^= h >> U64(29)
        h *= P64_3
        return h ^ (h >> U64(32))
    if n <= 128:
        acc = U64(n) * P64_1
        # pairs of 16-byte chunks from both ends, as many as the length holds (at most 4)
        pairs = (n - 1) // 32
        for k in range(pairs + 1):
            acc += _mix16(b, lo + 16 * k, 32 * k)
            acc += _mix16(b, lo + n - 16 * (k + 1), 32 * k + 16)
        return _avalanche(acc)
    if n <= 240:
        acc = U64(n) * P64_1
        for k in range(8):
            acc += _mix16(b, lo + 16 * k, 16 * k)
        acc = _avalanche(acc)
        for k in range(8, n // 16):
            acc += _mix16(b, lo + 16 * k, 16 * (k - 8) + 3)
        acc += _mix16(b, lo + n - 16, _LAST_KEY)
        return _avalanche(acc)
    return _long(b, lo, n, acc)


@kernel()
def _rows(buf, offsets, out, acc):
    for r in range(len(offsets) - 1):
        lo = offsets[r]
        out[r] = _xxh3(buf, lo, offsets[r + 1] - lo, acc)
    return out


from .native import xxh3_64_rows  # noqa: E402 - the entry point, numba's or not
