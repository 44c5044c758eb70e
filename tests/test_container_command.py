"""Recognising container-run commands and rewriting them (pure: no engine needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_tether.container import maybe_container_run
from mcp_tether.container.command import parse_run, why_not_followed

EXTRA = ["--cidfile", "/t/cid", "--label", "io.mcp-tether.run=x"]


@pytest.mark.parametrize(
    ("argv", "image"),
    [
        (["docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
         "ghcr.io/github/github-mcp-server"),
        (["/usr/bin/docker", "run", "-i", "--rm", "-e", "TOKEN", "img", "stdio"], "img"),
        (["docker", "-H", "unix:///x.sock", "run", "-it", "--name", "n", "img"], "img"),
        (["docker", "container", "run", "-ieA=1", "img"], "img"),
        (["podman", "run", "--interactive", "--env=A=1", "--rm", "img", "--flag"], "img"),
        (["env", "A=1", "docker", "run", "-i", "img"], "img"),
        (["docker", "run", "-i", "--sig-proxy", "--", "img"], "img"),
    ],
)
def test_a_foreground_container_run_is_recognised_with_its_image(
    argv: list[str], image: str
) -> None:
    cmd = parse_run(argv)
    assert cmd is not None
    assert cmd.image == image
    assert maybe_container_run(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["docker", "run", "-d", "img"],  # detached: not a stdio server
        ["docker", "run", "-di", "img"],
        ["docker", "ps"],
        ["docker", "run", "--help"],
        ["docker", "run", "-i"],  # no image
        ["npx", "-y", "@modelcontextprotocol/server-memory"],
        ["sh", "-c", "docker run -i img | tee log"],  # a pipeline: which run is it?
        ["sh", "-c", "docker pull img; docker run -i img"],
        ["python", "-m", "server"],
    ],
)
def test_anything_else_is_not_a_container_run(argv: list[str]) -> None:
    assert parse_run(argv) is None


def test_the_rewrite_puts_our_options_right_after_run_and_keeps_the_rest() -> None:
    argv = ["docker", "-H", "x", "run", "-i", "--rm", "img", "--port", "1"]
    cmd = parse_run(argv)
    assert cmd is not None
    assert cmd.global_args == ["-H", "x"]
    assert cmd.rewrite(EXTRA) == ["docker", "-H", "x", "run", *EXTRA, "-i", "--rm", "img",
                                  "--port", "1"]


def test_a_simple_sh_c_wrapper_is_followed_by_editing_its_string_in_place() -> None:
    argv = ["sh", "-c", 'exec docker run -i --rm -e "A=$HOME" img']
    cmd = parse_run(argv)
    assert cmd is not None
    assert cmd.image == "img"
    out = cmd.rewrite(EXTRA)
    assert out[:2] == ["sh", "-c"]
    assert out[2] == ('exec docker run --cidfile /t/cid --label io.mcp-tether.run=x'
                      ' -i --rm -e "A=$HOME" img')


@pytest.mark.parametrize(
    "text",
    [
        "docker run -i --rm img sh -c 'cat; sleep 9'",  # a shell in the container
        'docker run -i img sh -c "a | b && c > /dev/null"',
        r"docker run -i img echo \; \| \&",
        "docker run -i img sh -c 'x' # 'quoted' then not",
    ],
)
def test_an_sh_c_string_is_one_simple_command_however_its_operators_are_quoted(
    text: str
) -> None:
    """Quoted (or escaped) operators are words; only an unquoted one (a comment, in
    the last case) makes the string more than one command."""
    cmd = parse_run(["sh", "-c", text])
    if "#" in text:
        assert cmd is None and why_not_followed(["sh", "-c", text])
        return
    assert cmd is not None and cmd.image == "img" and cmd.interactive
    out = cmd.rewrite(["--label", "k=v"])[2]
    assert out == text.replace("docker run", "docker run --label k=v", 1)


@pytest.mark.parametrize("text", ['docker run -i "$(pick)"', "docker run -i `pick` x",
                                  'docker run -i img "$(a; b)"', "docker run -i 'img"])
def test_a_substitution_or_an_open_quote_is_not_one_simple_command(text: str) -> None:
    assert parse_run(["sh", "-c", text]) is None


def test_docker_exec_is_read_with_its_container_and_rewritten_after_exec() -> None:
    cmd = parse_run(["podman", "exec", "-i", "-e", "A=1", "box", "node", "s.js"])
    assert cmd is not None and cmd.verb == "exec" and cmd.image == "box"
    assert not cmd.sig_proxy  # an exec'd process gets nothing its client gets
    assert cmd.rewrite(["--env", "T=1"]) == ["podman", "exec", "--env", "T=1", "-i", "-e",
                                             "A=1", "box", "node", "s.js"]
    assert parse_run(["docker", "exec", "-d", "box", "x"]) is None
    assert parse_run(["docker", "exec", "-i", "box"]) is None  # no command


@pytest.mark.parametrize(("argv", "named"), [
    (["docker", "run", "-d", "img"], True),
    (["docker", "start", "-ai", "box"], True),
    (["sh", "-c", "docker run -i img | tee log"], True),
    (["docker", "run", "-i", "img"], False),  # followed
    (["docker", "ps"], False),  # starts nothing
    (["docker", "run", "--help"], False),
    (["python", "-m", "server"], False),
])
def test_a_container_command_that_cannot_be_followed_has_a_reason(
    argv: list[str], named: bool
) -> None:
    assert bool(why_not_followed(argv)) is named


def test_flags_are_read_from_option_clusters_but_not_from_values() -> None:
    cmd = parse_run(["docker", "run", "-it", "-e", "-d=1", "--rm", "img"])
    assert cmd is not None
    assert cmd.interactive and cmd.remove and not cmd.detached
    cmd = parse_run(["docker", "run", "-eXd=1", "img"])
    assert cmd is not None and not cmd.detached and not cmd.interactive


def test_a_user_cidfile_is_kept() -> None:
    cmd = parse_run(["docker", "run", "-i", "--cidfile", "/run/me.cid", "img"])
    assert cmd is not None and cmd.cidfile == "/run/me.cid"


@pytest.mark.parametrize("how", ["no-engine-on-path", "asked-with-no-engine", "daemon-down"])
def test_ps_says_container_support_is_off_in_one_line_and_lists_processes_anyway(
    how: str, tmp_path: object
) -> None:
    """The line on stderr comes where an engine is set up (DOCKER_HOST) or asked for
    (--containers), never on a machine without one; --json always has the field."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    env.pop("CONTAINER_HOST", None)
    env["DOCKER_CONFIG"] = str(tmp_path)  # no docker context
    asked = ["--containers"] if how == "asked-with-no-engine" else []
    if how == "daemon-down":
        env["DOCKER_HOST"] = f"unix://{tmp_path}/dead.sock"
    else:
        env["PATH"] = str(tmp_path)
    for args in (["ps", *asked], ["ps", "--json"]):
        p = subprocess.run([sys.executable, "-m", "mcp_tether", *args], env=env,
                           capture_output=True, text=True, timeout=120, check=False)
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr
        if "--json" not in args:
            off = [ln for ln in p.stderr.splitlines() if "container support is off" in ln]
            configured = how != "no-engine-on-path" or os.path.exists("/var/run/docker.sock")
            assert len(off) == (1 if configured else 0), p.stderr
        else:
            doc = json.loads(p.stdout)
            assert doc["containers"] == []
            assert doc["container_support"].startswith("container support is off")


def test_no_docker_daemon_socket_means_engine_off_without_asking_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain local `docker` (no context, DOCKER_HOST unset or unix://) whose socket is
    missing or dead is reported off without spawning the CLI (it would talk to the same
    socket); a remote DOCKER_HOST is left to the CLI to judge."""
    from mcp_tether.container import api
    from mcp_tether.container import engine as eng

    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {tmp_path}/asked\nexit 1\n")
    fake.chmod(0o755)
    for var in ("DOCKER_HOST", "DOCKER_CONTEXT", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "cfg"))
    monkeypatch.setattr(api, "DEFAULT_SOCKETS", (str(tmp_path / "none.sock"),))
    got = eng.engine_for("docker", path=str(fake.parent))
    assert got.off is not None and "no docker daemon answers" in got.off
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    got = eng.engine_for("docker", path=str(fake.parent))
    assert got.off is not None and "dead.sock" in got.off
    assert not (tmp_path / "asked").exists()
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    got = eng.engine_for("docker", path=str(fake.parent))
    assert got.off is not None and (tmp_path / "asked").exists()


def test_stdin_evidence_is_a_writer_held_or_none_left(tmp_path: Path) -> None:
    """The machine view's second rule, on a local process (a container's init seen from
    the host is one; the tests' pid namespace cannot see one): 1. while we hold its stdin
    pipe's write end, "live" naming us; 2. once we close it, "leaked"; 3. a stdin that is
    no pipe gives no evidence."""
    import os
    import subprocess

    from mcp_tether.container.leaked import LEAKED, LIVE, _stdin_evidence

    reader = subprocess.Popen(["sleep", "60"], stdin=subprocess.PIPE)
    try:
        assert reader.stdin is not None
        assert _stdin_evidence(reader.pid) == (LIVE, f"its stdin has a writer (pid {os.getpid()})")
        reader.stdin.close()
        assert _stdin_evidence(reader.pid) == (LEAKED, "its stdin has no writer (client gone)")
    finally:
        reader.kill()
        reader.wait()
    with open(tmp_path / "in", "w") as fh:
        fh.write("x")
    with open(tmp_path / "in") as fh:
        other = subprocess.Popen(["sleep", "60"], stdin=fh)
    try:
        assert _stdin_evidence(other.pid) is None
    finally:
        other.kill()
        other.wait()
