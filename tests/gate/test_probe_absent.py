"""A probe route the engine lacks (404) versus one that says "not yet" (503).

llama-cpp-python has no /health: once its ready line is printed, a 404 there proves a
working HTTP server and confirms READY. llama-server has /health and answers 503 while
it loads: that must never count, ready line or not.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from servegate.errors import ServerTimeout
from servegate.gate import wait

UVICORN = "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\n"
LLAMA_SERVER = "0.00.788.215 I srv  llama_server: model loaded\n"


@contextmanager
def http_server(port: int, health_status: int | None) -> Iterator[list[str]]:
    """A real HTTP server on ``port``; GET /health answers ``health_status`` (None: 404).

    Yields the list of paths it was asked for.
    """
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            known = self.path == "/health" and health_status is not None
            self.send_response(health_status if known and health_status else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def write_log(tmp_path: Path, text: str) -> str:
    """A finished log file holding ``text``."""
    path = tmp_path / "server.log"
    path.write_text("llama_context: constructing llama_context\n" + text)
    return str(path)


def test_404_after_the_ready_line_is_ready(port: int, tmp_path: Path) -> None:
    """llama-cpp-python: ready line, then 404 on /health (no such route): READY."""
    with http_server(port, None) as asked:
        verdict = wait(log_path=write_log(tmp_path, UVICORN), engine="llamacpp", port=port)
    assert verdict.status == "ready"
    assert verdict.detected_by == "log"
    assert "404" in verdict.reason and "no such route" in verdict.reason
    assert verdict.matched_line is not None and "Uvicorn running on" in verdict.matched_line
    assert "/health" in asked


def test_404_without_a_ready_line_is_not_ready(port: int, tmp_path: Path) -> None:
    """A 404 alone proves only that something answers HTTP: no READY without the line."""
    with http_server(port, None), pytest.raises(ServerTimeout) as info:
        wait(log_path=write_log(tmp_path, ""), engine="llamacpp", port=port, timeout_s=1.5)
    assert info.value.verdict.status == "timeout"


def test_503_while_loading_is_not_ready_even_after_a_ready_line(port: int, tmp_path: Path) -> None:
    """llama-server answering 503 (loading) keeps the gate waiting despite a ready line."""
    with http_server(port, 503), pytest.raises(ServerTimeout) as info:
        wait(
            log_path=write_log(tmp_path, LLAMA_SERVER), engine="llamacpp", port=port, timeout_s=1.5
        )
    verdict = info.value.verdict
    assert "ready line was seen but the probe failed" in verdict.reason
    assert "returned 503" in verdict.reason


def test_200_after_the_ready_line_is_ready(port: int, tmp_path: Path) -> None:
    """llama-server once loaded: /health 200 and the ready line give READY."""
    with http_server(port, 200):
        verdict = wait(log_path=write_log(tmp_path, LLAMA_SERVER), engine="llamacpp", port=port)
    assert verdict.status == "ready"
    assert "404" not in verdict.reason


def test_a_user_health_url_must_exist(port: int, tmp_path: Path) -> None:
    """--health-url names a route the user expects: a 404 there is never READY."""
    with http_server(port, None), pytest.raises(ServerTimeout):
        wait(
            log_path=write_log(tmp_path, UVICORN),
            engine="llamacpp",
            health_url=f"http://127.0.0.1:{port}/health",
            timeout_s=1.5,
        )


def test_other_engines_do_not_accept_a_404(port: int, tmp_path: Path) -> None:
    """The 404 rule is the profile's: SGLang's /health must answer 200."""
    line = "The server is fired up and ready to roll!\n"
    with http_server(port, None), pytest.raises(ServerTimeout):
        wait(log_path=write_log(tmp_path, line), engine="sglang", port=port, timeout_s=1.5)
