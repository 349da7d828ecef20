"""Before a point: the model to ask for, and one probe request that proves the endpoint.

Each is bounded as a whole (`servegate.bench.deadline`), not only per read: a server that
trickles its answer a byte at a time ends the point within its timeout too.

``GET /v1/models`` names the model when none was given; one short streaming request then
turns an unreachable or non-OpenAI server into one clear sentence instead of a run of
failures, and finds out whether the server accepts ``ignore_eos``.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request

from servegate.bench.dataset import encode_body
from servegate.bench.deadline import Late, within
from servegate.bench.settings import BenchSettings
from servegate.errors import BenchError, ModelNotServed

PREFLIGHT_TIMEOUT_S = 30.0
_MESSAGE_BYTES = 65536  # of an error answer, read for its message
_MESSAGE_CHARS = 300  # of that message, quoted in the error


def request_headers(settings: BenchSettings) -> dict[str, str]:
    """The headers of every request of the point (the bearer token when one was given)."""
    headers = {"Content-Type": "application/json"}
    if settings.authorization:
        headers["Authorization"] = settings.authorization
    return headers


def discover_model(
    base_url: str, headers: dict[str, str], timeout_s: float = PREFLIGHT_TIMEOUT_S
) -> str:
    """The first model id from ``GET /v1/models`` (the whole answer within ``timeout_s``);
    BenchError when the server has none."""
    url = base_url + "/v1/models"
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (http(s) checked)
    try:
        with within(timeout_s) as client, client.open(request) as resp:
            body = resp.read()
    except Late as exc:
        raise BenchError(
            f"GET {url} sent {exc} (--timeout): the server is overloaded or not an "
            "OpenAI-compatible server; check --url, give --model, or raise --timeout."
        ) from None
    except urllib.error.HTTPError as exc:
        raise BenchError(
            f"GET {url} returned HTTP {exc.code}; the server does not look OpenAI-compatible "
            "at this URL: check --url or give --model."
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchError(
            f"cannot reach {base_url} ({reason}); check --url and that the server is running."
        ) from None
    try:
        data = json.loads(body)
        return str(data["data"][0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise BenchError(
            f"GET {url} did not return an OpenAI model list; check --url or give --model."
        ) from None


def probe(
    settings: BenchSettings, model: str, headers: dict[str, str], warnings: list[str]
) -> bool:
    """Send one 2-token streaming request; return whether ``ignore_eos`` is accepted."""
    ignore_eos = settings.ignore_eos and settings.output_len is not None
    for attempt in (ignore_eos, False) if ignore_eos else (False,):
        body = encode_body(
            api=settings.api, model=model, text="Hello", max_tokens=2, ignore_eos=attempt
        )
        request = urllib.request.Request(  # noqa: S310 (http(s) checked)
            settings.endpoint,
            data=body,
            headers={**headers, "Accept-Encoding": "identity"},
            method="POST",
        )
        try:
            with within(settings.timeout_s) as client, client.open(request) as resp:
                first = resp.read(65536)
                coding = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        except Late as exc:
            raise BenchError(
                f"POST {settings.endpoint} sent {exc} (--timeout): the server is overloaded "
                "or not an OpenAI-compatible server; check --url and --api, or raise --timeout."
            ) from None
        except urllib.error.HTTPError as exc:
            said, about_model = _server_message(exc, model)
            if about_model:
                raise ModelNotServed(
                    f"the server does not serve --model {model!r} (HTTP {exc.code}: {said}); "
                    f"pass one it serves with --model (GET {settings.base_url}/v1/models "
                    "lists them), or leave --model out to take its first."
                ) from None
            if exc.code == 400 and attempt:
                continue  # retry without ignore_eos
            answer = f"HTTP {exc.code}" + (f" ({said})" if said else "")
            raise BenchError(
                f"POST {settings.endpoint} returned {answer}; the server does not serve "
                f"the OpenAI {settings.api} API there: check --url and --api."
            ) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BenchError(
                f"cannot reach {settings.endpoint} ({reason}); check --url and that the "
                "server is running."
            ) from None
        if coding != "identity":
            raise BenchError(
                f"POST {settings.endpoint} answered compressed (Content-Encoding: {coding}) "
                "although asked for identity; turn compression off for text/event-stream on "
                "the server or its proxy."
            )
        if b"data:" not in first:
            raise BenchError(
                f"POST {settings.endpoint} did not answer with a server-sent event stream; "
                "the server is not OpenAI-compatible: check --url and --api."
            )
        if ignore_eos and not attempt:
            warnings.append(
                "the server rejected ignore_eos; requests are sent without it, so outputs "
                "may be shorter than --output-len."
            )
        return attempt
    return False


def _server_message(exc: urllib.error.HTTPError, model: str) -> tuple[str, bool]:
    """What an error answer says (OpenAI's ``{"error": {"message"}}``, vLLM's
    ``{"message"}``, FastAPI's ``{"detail"}``, or plain text), and whether it is about
    the model: its ``param`` is ``model``, or it names the model as a word of its own."""
    try:
        body = exc.read(_MESSAGE_BYTES)
    except OSError:
        return "", False
    try:
        data = json.loads(body)
    except ValueError:
        data = body.decode("utf-8", "replace")
    error = data.get("error") if isinstance(data, dict) else None
    fields = error if isinstance(error, dict) else data if isinstance(data, dict) else {}
    message = fields.get("message") or fields.get("detail") or error or data
    text = " ".join(message.split())[:_MESSAGE_CHARS] if isinstance(message, str) else ""
    named = re.search(rf"(?<![\w.:/-]){re.escape(model)}(?![\w.:/-])", text) is not None
    return text, fields.get("param") == "model" or (named and "model" in text.lower())
