"""How GetCheckpoints cuts its pages (no server): within PAGE_BYTES and PAGE_POSITIONS,
never empty while positions follow."""

from __future__ import annotations

from tuneplane.ingest.checkpoints import PAGE_BYTES, PAGE_POSITIONS, cut


def sizes(*each: int) -> list[int]:
    return list(each)


def test_a_page_holds_what_fits_and_says_more_follow() -> None:
    assert cut(sizes(10, 10, 10)) == (3, False)
    big = PAGE_BYTES // 2
    assert cut(sizes(big, big, 10)) == (1, True)
    assert cut(sizes(PAGE_BYTES * 4)) == (1, False)
    assert cut(sizes(*[1] * (PAGE_POSITIONS + 1))) == (PAGE_POSITIONS, True)
    assert cut([]) == (0, False)
