"""Run a command with the survey's loopback services up: PostgreSQL, MariaDB, memcached.

    python bench/survey_services.py -- mcp-tether survey docs/survey.list --out X

Some servers of docs/survey.list need a database to start at all (`needs=postgres`,
`needs=mariadb`, `needs=memcached`). Debian packages each of these, so the survey gives
them a real one instead of a closed port: this script starts each service from Debian's
binaries in a throwaway folder, listening on 127.0.0.1 only, on the ports the list's
lines name (below), with a user `survey`, password `survey` and a database `survey`;
runs the command; then stops the services it started (its own children, by their
handles) and deletes the folders, however the command ended. Its status is the
command's.

Guarantees:
- Nothing listens beyond loopback; nothing outside the throwaway folders is written.
- A service that cannot be started (its package is missing) is said in one line and
  left out: the servers that need it then report "needs a service", as with no script.
- Only processes this script started are signalled (SIGTERM, then SIGKILL after 10 s).

Needs Debian's `postgresql`, `mariadb-server` and `memcached` (`apt-get install`), and
root (PostgreSQL's and MariaDB's servers run as their own users).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The list's lines name these (docs/survey.list): far from the services' defaults, so a
# real database on this machine is never the one a surveyed server talks to.
POSTGRES_PORT = 55432
MARIADB_PORT = 53306
MEMCACHED_PORT = 51211
USER = PASSWORD = DATABASE = "survey"
READY = 60.0


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + READY
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited at start (status {proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)  # polling a port with a deadline: no event to wait on
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {READY:.0f} s")


def _own(path: Path, user: str) -> None:
    if os.geteuid() == 0:  # the server runs as its own user and must write there
        shutil.chown(path, user)


def _as(user: str, argv: list[str]) -> list[str]:
    return ["runuser", "-u", user, "--", *argv] if os.geteuid() == 0 else argv


def postgres(root: Path) -> subprocess.Popen[bytes]:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not bins:
        raise RuntimeError("no PostgreSQL server (apt-get install postgresql)")
    bindir = Path(bins[-1]).parent
    data = root / "pg"
    data.mkdir()
    pw = root / "pgpass"
    pw.write_text(PASSWORD + "\n")
    for path in (root, data, pw):
        _own(path, "postgres")
    subprocess.run(_as("postgres", [str(bindir / "initdb"), "-D", str(data), "-U", USER,
                                    "--pwfile", str(pw), "--auth", "md5", "-E", "UTF8"]),
                   check=True, stdout=subprocess.DEVNULL)
    proc = subprocess.Popen(_as("postgres", [
        str(bindir / "postgres"), "-D", str(data), "-p", str(POSTGRES_PORT),
        "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={root}"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(POSTGRES_PORT, proc, "postgres")
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    deadline = time.monotonic() + READY
    while subprocess.run([str(bindir / "psql"), "-h", "127.0.0.1", "-p", str(POSTGRES_PORT),
                          "-U", USER, "-d", "postgres", "-qc", f"CREATE DATABASE {DATABASE}"],
                         env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("postgres: could not create the database")
        time.sleep(0.2)  # the server accepts connections before it accepts logins
    return proc


def mariadb(root: Path) -> subprocess.Popen[bytes]:
    server = shutil.which("mariadbd") or shutil.which("mysqld") or "/usr/sbin/mariadbd"
    if not os.path.exists(server) or not shutil.which("mariadb-install-db"):
        raise RuntimeError("no MariaDB server (apt-get install mariadb-server)")
    data = root / "mariadb"
    data.mkdir()
    user = "mysql" if os.geteuid() == 0 else os.environ.get("USER", "")
    _own(data, "mysql")
    sock = data / "mariadb.sock"
    subprocess.run(["mariadb-install-db", f"--datadir={data}", f"--user={user}",
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.Popen([server, "--no-defaults", f"--datadir={data}", f"--user={user}",
                             "--bind-address=127.0.0.1", f"--port={MARIADB_PORT}",
                             f"--socket={sock}", f"--pid-file={data / 'mariadb.pid'}",
                             "--skip-log-error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(MARIADB_PORT, proc, "mariadb")
    sql = (f"CREATE DATABASE {DATABASE}; CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY "
           f"'{PASSWORD}'; GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1';")
    subprocess.run(["mariadb", f"--socket={sock}", "-uroot", "-e", sql], check=True)
    return proc


def memcached(root: Path) -> subprocess.Popen[bytes]:
    server = shutil.which("memcached")
    if server is None:
        raise RuntimeError("no memcached (apt-get install memcached)")
    argv = [server, "-l", "127.0.0.1", "-p", str(MEMCACHED_PORT), "-U", "0", "-m", "64"]
    if os.geteuid() == 0:
        argv += ["-u", "memcache"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(MEMCACHED_PORT, proc, "memcached")
    return proc


def stop(procs: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
    for _, p in procs:
        if p.poll() is None:
            p.terminate()  # our own child, by its handle: still ours until reaped
    for name, p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            print(f"survey_services: {name} did not stop in 10 s: SIGKILL", file=sys.stderr)
            p.kill()
            p.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command to run: -- mcp-tether survey ...")
    root = Path(tempfile.mkdtemp(prefix="mcp-tether-services-"))
    os.chmod(root, 0o755)
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        for name, start in (("postgres", postgres), ("mariadb", mariadb),
                            ("memcached", memcached)):
            try:
                procs.append((name, start(root)))
                print(f"survey_services: {name} on 127.0.0.1", file=sys.stderr)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                print(f"survey_services: {name} left out: {exc}", file=sys.stderr)
        return subprocess.run(command).returncode
    except KeyboardInterrupt:
        return 130
    finally:
        stop(procs)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
