"""Packed postings of the frequent terms, for the compiled scorer (_scorer.c).

Per frequent term (the terms with bitsets, bitsets.py) its slots in ascending order (int32) and
their weighted tfs (double), side by side, kept in step with the dict postings by index.py. Walking
them touches no Python object per posting; a dict's int and float objects lie all over memory, and
walking those costs three times as much.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable

Pack = tuple["array[int]", "array[float]"]


def pack(postings: Iterable[tuple[int, float]]) -> Pack:
    """The pack of {slot: tf} items (in any order)."""
    ordered = sorted(postings)
    return array("i", [slot for slot, _ in ordered]), array("d", [tf for _, tf in ordered])


def put(held: Pack, slot: int, tf: float) -> None:
    """Hold `slot` with `tf` (a new slot goes at the end: no search)."""
    slots, tfs = held
    if not slots or slots[-1] < slot:
        slots.append(slot)
        tfs.append(tf)
        return
    place = bisect.bisect_left(slots, slot)
    if slots[place] == slot:
        tfs[place] = tf
    else:
        slots.insert(place, slot)
        tfs.insert(place, tf)


def take(held: Pack, slot: int) -> None:
    """Drop `slot` (held)."""
    slots, tfs = held
    place = bisect.bisect_left(slots, slot)
    del slots[place], tfs[place]
