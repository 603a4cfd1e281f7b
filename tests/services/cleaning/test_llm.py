import pytest

from services.cleaning.llm import LLMEndpoint, OpenAICompatClient, render_chatml
from shared.errors import UpstreamError, UpstreamUnavailable
from tests.services.cleaning.fake_openai import serve


@pytest.fixture(scope="module")
def base_url():
    with serve() as url:
        yield url


def _client(url, **kw):
    return OpenAICompatClient(LLMEndpoint(base_url=url, model="m", api_key="test-key", **kw))


def test_chat_returns_n_samples_over_http(base_url):
    client = _client(base_url)
    samples = client.chat([{"role": "user", "content": "echo me"}], n=3)
    assert [s.content for s in samples] == ["echo me"] * 3


def test_prompt_logprobs_are_echoed_with_offsets(base_url):
    toks = _client(base_url + "/v1").prompt_logprobs("a b a")
    assert [t.token for t in toks] == ["a ", "b ", "a"] and toks[0].logprob is None
    assert toks[2].logprob > toks[1].logprob and [t.offset for t in toks] == [0, 2, 4]


def test_classify_maps_reply_to_a_label(base_url):
    client = _client(base_url)
    assert client.classify([{"role": "assistant", "content": "the integral of x"}], ("math", "other")) == "math"


def test_http_errors_become_upstream_errors(base_url):
    with pytest.raises(UpstreamError):
        _client(base_url)._post("/nope", {})
    with socket_closed_port() as url, pytest.raises(UpstreamUnavailable):
        _client(url, timeout_s=2).chat([{"role": "user", "content": "x"}])


def test_render_chatml_adds_generation_prompt():
    text = render_chatml([{"role": "user", "content": "hi"}])
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


class socket_closed_port:
    """A loopback URL on a port nothing listens on."""

    def __enter__(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return f"http://127.0.0.1:{s.getsockname()[1]}"

    def __exit__(self, *exc):
        return False
