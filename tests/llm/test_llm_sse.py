"""The SSE reader on its own: lines in, JSON chunks out."""

from __future__ import annotations

import pytest

from nanohermes.core.errors import BadResponse
from nanohermes.llm.sse import DONE, iter_chunks, iter_sse_data


def test_comments_fields_and_missing_space() -> None:
    lines = [
        ": keep-alive",
        "",
        "event: message",
        "id: 7",
        "retry: 100",
        'data:{"a": 1}',
        "",
        'data: {"b": 2}',
        "",
    ]
    assert list(iter_chunks(lines)) == [{"a": 1}, {"b": 2}]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert list(iter_sse_data(["data: line one", "data: line two", ""])) == [["line one", "line two"]]
    assert list(iter_chunks(['data: {"text":', 'data:  "x"}', ""])) == [{"text": "x"}]


def test_events_without_blank_lines_are_split_per_line() -> None:
    lines = ['data: {"n": 1}', 'data: {"n": 2}', "data: [DONE]"]
    assert list(iter_chunks(lines)) == [{"n": 1}, {"n": 2}, DONE]


def test_last_event_without_trailing_blank_line_is_delivered() -> None:
    assert list(iter_chunks(['data: {"end": true}'])) == [{"end": True}]


def test_done_marker_and_empty_data_keep_alives() -> None:
    assert list(iter_chunks(["data:", "", "data: ", "", "data: [DONE]", ""])) == [DONE]


def test_only_one_leading_space_is_removed() -> None:
    assert list(iter_sse_data(["data:  two spaces", ""])) == [[" two spaces"]]


@pytest.mark.parametrize("payload", ["<html>", "[1, 2]", '"text"'])
def test_non_object_data_is_a_bad_response(payload: str) -> None:
    with pytest.raises(BadResponse) as caught:
        list(iter_chunks([f"data: {payload}", ""]))
    assert "\n" not in caught.value.one_line()


def test_line_breaks_split_across_pieces_are_one_break_each() -> None:
    from nanohermes.llm.sse import iter_lines

    pieces = ["a\r", "", "\nb\r", "\r\n", "c\u2028d\n", "tail"]
    assert list(iter_lines(pieces)) == ["a", "b", "", "c\u2028d", "tail"]
