"""The bitsets over slots that the index keeps up to date for topk.py (no per-query building):
- per frequent term (more than RARE_DF entries hold it), in index.py: the entries where its
  weighted tf is exactly 1, and the others (with an upper bound of their tf);
- per length bucket (weighted lengths within a factor BUCKET_RATIO, `Buckets`): its shortest
  length, its entries, and the entries in it or any shorter bucket.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from nanohermes.memory.constants import K1, B

RARE_DF = 32
"""A term held by at most this many entries is scored entry by entry, without bitsets."""
BUCKET_RATIO = 1.06
_LOG_RATIO = math.log(BUCKET_RATIO)


def bucket_of(length: float) -> int:
    return int(math.log(length + 1.0) / _LOG_RATIO)


def bucket_floor(bucket: int) -> float:
    """The shortest weighted length bucket `bucket` can hold."""
    return max(math.exp(bucket * _LOG_RATIO) - 1.0, 0.0)


def saturation(avgdl: float) -> tuple[float, float]:
    """(a, b) with K1 · (1 − B + B · len / max(avgdl, 1)) computed as `a + b · len` (both scorers)."""
    return K1 * (1.0 - B), K1 * B / max(avgdl, 1.0)


def bitset(slots: Iterable[int], size: int) -> int:
    """An int with the bits `slots` set, built through a bytearray (one pass, no big-int churn)."""
    bits = bytearray((size + 7) // 8)
    for slot in slots:
        bits[slot >> 3] |= 1 << (slot & 7)
    return int.from_bytes(bits, "little")


class Buckets:
    """Slots by weighted length bucket, kept up to date by the index: `keys` the non-empty buckets,
    shortest first; `floors` their shortest possible lengths; `bits` per bucket its slots;
    `shorter` per position in `keys` the slots of that bucket or any shorter one."""

    __slots__ = ("keys", "floors", "bits", "shorter")

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.floors: list[float] = []
        self.bits: dict[int, int] = {}
        self.shorter: list[int] = []

    def add(self, slot: int, length: float) -> None:
        bit = 1 << slot
        bucket = bucket_of(length)
        place = bisect.bisect_left(self.keys, bucket)
        held = self.bits.get(bucket)
        if held is None:
            self.keys.insert(place, bucket)
            self.floors.insert(place, bucket_floor(bucket))
            self.shorter.insert(place, self.shorter[place - 1] if place else 0)
            held = 0
        self.bits[bucket] = held | bit
        shorter = self.shorter
        for i in range(place, len(shorter)):
            shorter[i] |= bit

    def remove(self, slot: int, length: float) -> None:
        bit = 1 << slot
        bucket = bucket_of(length)
        place = bisect.bisect_left(self.keys, bucket)
        shorter = self.shorter
        for i in range(place, len(shorter)):
            shorter[i] ^= bit
        held = self.bits[bucket] ^ bit
        if held:
            self.bits[bucket] = held
        else:
            del self.bits[bucket], self.keys[place], self.floors[place], shorter[place]

    @classmethod
    def build(cls, lengths: Sequence[float]) -> Buckets:
        """The buckets of slots 0, 1, … with these lengths (all live)."""
        slots: dict[int, list[int]] = {}
        for slot, length in enumerate(lengths):
            slots.setdefault(bucket_of(length), []).append(slot)
        made = cls()
        made.keys = sorted(slots)
        made.floors = [bucket_floor(bucket) for bucket in made.keys]
        made.bits = {bucket: bitset(slots[bucket], len(lengths)) for bucket in made.keys}
        union = 0
        for bucket in made.keys:
            union |= made.bits[bucket]
            made.shorter.append(union)
        return made
