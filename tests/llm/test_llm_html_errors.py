"""An error answered with a web page (a --base-url path typo, a proxy's error page): one short line,
not the first 200 characters of its markup."""

from __future__ import annotations

import httpx
import pytest
from llm_helpers import URL, make_client

from nanohermes.core.errors import LLMError
from nanohermes.core.types import Message

PAGE = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>" + "x" * 500


def _fail(status: int, body: str) -> LLMError:
    client = make_client(lambda request: httpx.Response(status, text=body), max_retries=0)
    with pytest.raises(LLMError) as caught:
        list(client.stream([Message(role="user", content="hi")]))
    return caught.value


def test_a_404_web_page_says_the_base_url_is_wrong() -> None:
    err = _fail(404, PAGE)
    assert str(err).startswith(f"no API at {URL} (404, a web page)")
    assert "--base-url" in err.hint
    assert "<" not in str(err)


@pytest.mark.parametrize("status", [400, 403, 502])
def test_other_statuses_name_the_page_without_its_markup(status: int) -> None:
    err = _fail(status, PAGE)
    assert "a web page, not an API answer" in str(err)
    assert "DOCTYPE" not in str(err)
    assert "Not Found" not in str(err)


def test_a_json_404_still_names_the_model() -> None:
    err = _fail(404, '{"error": {"message": "The model `test-model` does not exist"}}')
    assert "model not found: test-model" in str(err)
    assert "does not exist" in str(err)
