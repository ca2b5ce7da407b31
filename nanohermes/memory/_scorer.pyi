from array import array

def top_k(
    postings: list[dict[int, float]],
    weights: list[float],
    lengths: array[float],
    stamps: list[int],
    scratch: array[float],
    sat_a: float,
    sat_b: float,
    k: int,
    /,
) -> list[tuple[float, int]]: ...
