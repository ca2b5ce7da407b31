"""The fake endpoint itself: scripting, streaming, matching, recording."""

from __future__ import annotations

import json

import httpx
from fake_server import FakeServer
from fake_server import fake_server as fake_server


def _sse_data(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


def test_text_reply_streams_as_sse_and_records_body(fake_server: FakeServer) -> None:
    fake_server.push_text("Hello there, friend")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    response = httpx.post(fake_server.url + "/chat/completions", json=body, timeout=5)
    data = _sse_data(response.text)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert data[-1] == "[DONE]"
    text = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in map(json.loads, data[:-1]) if c["choices"]
    )
    assert text == "Hello there, friend"
    assert fake_server.bodies == [body]


def test_json_reply_tool_calls_and_default(fake_server: FakeServer) -> None:
    fake_server.push_tool_calls([("read_file", {"path": "a.txt"})])
    url = fake_server.url + "/chat/completions"
    first = httpx.post(url, json={"model": "m", "messages": []}, timeout=5).json()
    call = first["choices"][0]["message"]["tool_calls"][0]
    assert call["id"] == "call_1"
    assert json.loads(call["function"]["arguments"]) == {"path": "a.txt"}
    fake_server.default_text = "fallback"
    second = httpx.post(url, json={"model": "m", "messages": []}, timeout=5).json()
    assert second["choices"][0]["message"]["content"] == "fallback"


def test_match_status_and_raw_sse(fake_server: FakeServer) -> None:
    url = fake_server.url + "/chat/completions"
    fake_server.push_text("general")
    fake_server.push_text("for distill", match="DISTILL-MARK")
    fake_server.push_status(429, {"error": {"message": "slow"}}, headers={"Retry-After": "0"})
    fake_server.push_sse([": keep-alive", {"choices": []}], delay=0.01)
    hit = httpx.post(url, json={"messages": [{"role": "system", "content": "DISTILL-MARK"}]}, timeout=5)
    assert hit.json()["choices"][0]["message"]["content"] == "for distill"
    assert httpx.post(url, json={}, timeout=5).json()["choices"][0]["message"]["content"] == "general"
    limited = httpx.post(url, json={}, timeout=5)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "0"
    raw = httpx.post(url, json={"stream": True}, timeout=5)
    assert raw.text.startswith(": keep-alive\n\n")
    assert fake_server.wait_for_requests(4, timeout=1)
    assert fake_server.pending() == 0
