"""The Docker Engine API on its local UNIX socket, for reads only: ping, list, inspect.

Why: `mcp-tether ps` asks the engine about running containers on every call; one HTTP/1.0
GET on the daemon's socket answers that without starting the `docker` CLI (a separate
program, twice: `version`, then `ps`). Only the plain local case takes this road: engine
`docker`, no global options, no `DOCKER_CONTEXT` and no current context in the CLI's
config, `DOCKER_HOST` unset or `unix://`. Anything else (remote hosts, contexts, podman)
goes through the CLI as before, and so do all actions (kill, rm), which stay with the CLI.

Guarantees: `local_socket()` names the socket this road would use, or None; `get(sock,
path)` returns the decoded JSON body of a 200 answer. A socket that is missing or
refuses is `Unreachable` (no daemon there: the CLI could not reach it either); any
other surprise (a non-200 status, a body that is not JSON, a timeout) is `ApiError`,
and the caller falls back to the CLI. Stdlib only.
"""

from __future__ import annotations

import json
import os
import socket

__all__ = ["local_socket", "get", "ApiError", "Unreachable"]

DEFAULT_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")
TIMEOUT = 5.0  # one read; a local daemon answers a list in milliseconds
MAX_BODY = 64 * 1024 * 1024  # an inspect of many containers is large, never this large


class ApiError(Exception):
    """The socket answered, but not as the Engine API does: use the CLI instead."""


class Unreachable(ApiError):
    """No daemon listens on the socket (missing, refused, not permitted)."""


def _has_context() -> bool:
    if os.environ.get("DOCKER_CONTEXT"):
        return True
    cfg = os.path.join(os.environ.get("DOCKER_CONFIG") or os.path.expanduser("~/.docker"),
                       "config.json")
    try:
        with open(cfg, encoding="utf-8", errors="replace") as fh:
            return "currentContext" in fh.read()
    except OSError:
        return False


def configured() -> bool:
    """Whether this machine is set up for a container engine: DOCKER_HOST, CONTAINER_HOST
    or a docker context named, or a daemon's socket present. A machine that never had
    one says none of these; a binary on PATH alone is not a setup."""
    if os.environ.get("DOCKER_HOST") or os.environ.get("CONTAINER_HOST") or _has_context():
        return True
    uid_socket = f"/run/user/{os.getuid()}/podman/podman.sock"
    return any(os.path.exists(p) for p in (*DEFAULT_SOCKETS, uid_socket,
                                            "/run/podman/podman.sock"))


def local_socket(global_args: list[str] | None = None) -> str | None:
    """The UNIX socket the docker CLI would talk to here, when that is plain to see."""
    if global_args or _has_context():
        return None
    host = os.environ.get("DOCKER_HOST", "")
    if host:
        return host[len("unix://"):] if host.startswith("unix://") else None
    for path in DEFAULT_SOCKETS:
        if os.path.exists(path):
            return path
    return DEFAULT_SOCKETS[0]  # absent: `get` says Unreachable, as the CLI would fail


def get(sock_path: str, path: str, timeout: float = TIMEOUT) -> object:
    """GET `path` from the Engine API on `sock_path`; the decoded JSON of a 200 answer."""
    try:
        os.stat(sock_path)
    except FileNotFoundError as e:
        raise Unreachable(f"{sock_path}: {e.strerror}") from e
    except OSError:
        pass  # connect() says what is wrong
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        try:
            s.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError, PermissionError) as e:
            raise Unreachable(f"{sock_path}: {e.strerror or e}") from e
        # HTTP/1.0: the daemon answers with a plain body and closes (no chunking).
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
        chunks, size = [], 0
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BODY:
                raise ApiError(f"GET {path}: answer over {MAX_BODY} bytes")
    except OSError as e:  # a timeout, a reset
        raise ApiError(f"GET {path}: {e.strerror or e}") from e
    finally:
        s.close()
    head, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if not sep or len(status) < 2 or not status[0].startswith(b"HTTP/"):
        raise ApiError(f"GET {path}: not an HTTP answer")
    if status[1] != b"200":
        raise ApiError(f"GET {path}: HTTP {status[1].decode(errors='replace')}")
    try:
        return json.loads(body)
    except ValueError as e:
        raise ApiError(f"GET {path}: the body is not JSON") from e
