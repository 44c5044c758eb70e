"""`container.api`: the Engine API read over the daemon's UNIX socket (a fake daemon here;
the container tests with a real daemon use the same road through `ps`)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether.container import api


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A UNIX socket answering each GET path with a canned raw HTTP answer."""
    path = str(tmp_path / "d.sock")
    answers: dict[str, bytes] = {}
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                target = request.split(b" ")[1].decode() if b" " in request else ""
                conn.sendall(answers.get(target, b"HTTP/1.0 404 Not Found\r\n\r\n{}"))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield path, answers
    finally:
        srv.shutdown(socket.SHUT_RDWR)
        srv.close()
        t.join(5)


def ok(body: object) -> bytes:
    return b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps(body).encode()


def test_a_200_answer_is_its_decoded_json_body(daemon: tuple[str, dict[str, bytes]]) -> None:
    path, answers = daemon
    answers["/containers/json"] = ok([{"Id": "ab12"}])
    assert api.get(path, "/containers/json") == [{"Id": "ab12"}]


@pytest.mark.parametrize("raw, why", [
    (b"HTTP/1.0 404 Not Found\r\n\r\n{}", "HTTP 404"),
    (b"HTTP/1.0 200 OK\r\n\r\nnot json", "not JSON"),
    (b"SSH-2.0-OpenSSH\r\n", "not an HTTP answer"),
])
def test_any_other_answer_is_an_api_error_so_the_cli_decides(
    daemon: tuple[str, dict[str, bytes]], raw: bytes, why: str
) -> None:
    path, answers = daemon
    answers["/version"] = raw
    with pytest.raises(api.ApiError, match=why) as got:
        api.get(path, "/version")
    assert not isinstance(got.value, api.Unreachable)


def test_a_missing_or_dead_socket_is_unreachable(tmp_path: Path) -> None:
    with pytest.raises(api.Unreachable):
        api.get(str(tmp_path / "none.sock"), "/version")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(tmp_path / "dead.sock"))
    dead.close()  # bound, never listening: connection refused
    with pytest.raises(api.Unreachable):
        api.get(str(tmp_path / "dead.sock"), "/version")


def test_only_a_plain_local_docker_takes_the_api_road(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("DOCKER_HOST", "DOCKER_CONTEXT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "cfg"))
    monkeypatch.setattr(api, "DEFAULT_SOCKETS", (str(tmp_path / "d.sock"),))
    assert api.local_socket() == str(tmp_path / "d.sock")
    assert api.local_socket(["-H", "tcp://x:2375"]) is None
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock")
    assert api.local_socket() == "/run/user/1000/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "ssh://me@box")
    assert api.local_socket() is None
    monkeypatch.delenv("DOCKER_HOST")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text('{"currentContext": "remote"}')
    assert api.local_socket() is None
