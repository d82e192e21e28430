"""Red-team attacks on the data directory: one owner across PID namespaces, repairs that
touch only what kbctl made, and every typed path as input. Each attack runs real kbctl
processes in its own folder under ``workdir`` and returns ``(held, detail)``.

    ATTACKS = [(class_name, attack_name, run), ...]   run(workdir) -> (held, detail)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

_SCRIPT = Path(sys.executable).parent / "kbctl"
KBCTL = ([str(_SCRIPT)] if _SCRIPT.exists()
         else [sys.executable, "-c", "from kbctl.entry import main; main()"])
DEADLINE_S = 120.0
OWNER = "one owner per data directory"
REPAIRS = "repairs touch only what kbctl made"
PATHS = "every typed path is input"


class _Kb:
    """One data directory under ``workdir`` and the servers started on it."""

    def __init__(self, workdir: Path, name: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # the server's own user must reach it, as root
            workdir.chmod(0o755)
        self.root = workdir / name
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir()
        self.root.chmod(0o755)
        self.data_dir = self.root / "kb"
        self.pgdata = self.data_dir / "pg"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")}
        self.env["KBCTL_SERVER_LINGER"] = "1"

    def argv(self, *args: str) -> list[str]:
        return [*KBCTL, *args, "--data-dir", str(self.data_dir)]

    def run(self, *args: str, linger: float | None = None, prefix: tuple[str, ...] = ()
            ) -> subprocess.CompletedProcess[str]:
        env = self.env | ({"KBCTL_SERVER_LINGER": str(linger)} if linger is not None else {})
        return subprocess.run([*prefix, *self.argv(*args)], cwd=self.root, env=env, text=True,
                              capture_output=True, timeout=DEADLINE_S, check=False)

    def postmasters(self) -> list[int]:
        """Pids (here) of the postmasters of this data directory, in any namespace below."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"-D" in cmd and str(self.pgdata).encode() in cmd and b"postgres" in cmd[0]:
                found.append(int(proc.name))
        return found

    def starts(self) -> int:
        try:
            return (self.pgdata / "log").read_text(errors="replace").count(
                "starting PostgreSQL")
        except OSError:
            return 0

    def close(self) -> None:
        for pid in self.postmasters():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 30
        while self.postmasters() and time.monotonic() < end:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)


def _said(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return f"exit {result.returncode}: {lines[0][:200] if lines else '(nothing on stderr)'}"


def _unshare() -> list[str] | None:
    found = shutil.which("unshare")
    if found is None:
        return None
    probe = subprocess.run([found, "-p", "-f", "--mount-proc", "true"], capture_output=True,
                           timeout=30, check=False)
    return [found, "-p", "-f", "--kill-child", "--mount-proc"] if probe.returncode == 0 else None


def _with_kb(name: str, attack: Callable[[_Kb], tuple[bool, str]]
             ) -> Callable[[Path], tuple[bool, str]]:
    def run(workdir: Path) -> tuple[bool, str]:
        kb = _Kb(workdir, name)
        try:
            return attack(kb)
        finally:
            kb.close()

    run.__name__ = name
    return run


def _seeded(kb: _Kb) -> str | None:
    first = kb.run("ingest", "text", "The widget spins clockwise.", "--ref", "widgets")
    return None if first.returncode == 0 else f"could not set up: {_said(first)}"


def _kept_up(kb: _Kb) -> str | None:
    """Seed the knowledge base and keep its server up for a minute (None: done)."""
    return _seeded(kb) or (None if kb.run("status", linger=60).returncode == 0
                           else "could not keep a server up")


def _namespaced(kb: _Kb) -> tuple[list[str] | None, str]:
    """The ``unshare`` command line, with the server kept up; or None and why not."""
    unshare = _unshare()
    if unshare is None:
        return None, "not run: unshare -p is not permitted here"
    problem = _kept_up(kb)
    return (None, problem) if problem else (unshare, "")


# --- one owner per data directory ----------------------------------------------------------


def _second_namespace_joins(kb: _Kb) -> tuple[bool, str]:
    unshare, problem = _namespaced(kb)
    if unshare is None:
        return False, problem
    pid_file = (kb.pgdata / "postmaster.pid").read_text()
    before = kb.starts()
    there = kb.run("ingest", "text", "Gears mesh.", "--ref", "gears", "--json",
                   prefix=(*unshare, "-i"))
    same = (kb.pgdata / "postmaster.pid").read_text() == pid_file
    held = there.returncode == 0 and same and kb.starts() == before
    return held, (f"{_said(there)}; pid file kept: {same}; servers started meanwhile: "
                  f"{kb.starts() - before}; postmasters now: {len(kb.postmasters())}")


def _unreachable_holder_named(kb: _Kb) -> tuple[bool, str]:
    unshare, problem = _namespaced(kb)
    if unshare is None:
        return False, problem
    pid_file = kb.pgdata / "postmaster.pid"
    lines = pid_file.read_text().splitlines()
    lines[4] = str(kb.root / "elsewhere")  # a socket this namespace cannot reach
    pid_file.write_text("\n".join(lines) + "\n")
    there = kb.run("query", "widget", "--json", prefix=tuple(unshare))
    try:
        message = json.loads(there.stdout)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = ""
    kept = pid_file.read_text().splitlines() == lines
    held = there.returncode == 3 and "is in use by" in message and kept and len(
        kb.postmasters()) == 1
    return held, f"{_said(there)}; pid file kept: {kept}"


def _sigkill_heals(kb: _Kb) -> tuple[bool, str]:
    problem = _kept_up(kb)
    if problem:
        return False, problem
    for pid in kb.postmasters():
        os.kill(pid, signal.SIGKILL)
    end = time.monotonic() + 30
    while kb.postmasters() and time.monotonic() < end:
        time.sleep(0.05)
    after = kb.run("query", "widget", "--json")
    try:
        found = json.loads(after.stdout)["results"]
    except (ValueError, KeyError, TypeError):
        found = []
    held = (after.returncode == 0 and "repaired" in after.stderr and bool(found)
            and "clockwise" in found[0]["text"])
    return held, _said(after)


# --- repairs touch only what kbctl made -------------------------------------------------------


def _users_folder(kb: _Kb) -> None:
    (kb.pgdata / "log").mkdir(parents=True)
    (kb.pgdata / "log" / "keep.txt").write_text("mine")
    (kb.pgdata / "postgresql.conf").write_text("# mine\n")


def _untouched(kb: _Kb) -> bool:
    try:
        return ((kb.pgdata / "log" / "keep.txt").read_text() == "mine"
                and (kb.pgdata / "postgresql.conf").read_text() == "# mine\n")
    except OSError:
        return False


def _doctor_on_users_folder(kb: _Kb) -> tuple[bool, str]:
    _users_folder(kb)
    doctor = kb.run("doctor", "--json")
    try:
        report = json.loads(doctor.stdout)
    except ValueError:
        report = {}
    named = any("did not make" in p for p in report.get("remaining", []))
    held = doctor.returncode == 1 and named and _untouched(kb) and not report.get("repaired")
    return held, f"exit {doctor.returncode}; reported: {named}; left whole: {_untouched(kb)}"


def _ingest_on_users_folder(kb: _Kb) -> tuple[bool, str]:
    _users_folder(kb)
    ingest = kb.run("ingest", "text", "The widget spins.", "--ref", "w", "--json")
    held = (ingest.returncode in (2, 3) and _untouched(kb) and "Traceback" not in ingest.stderr)
    return held, f"{_said(ingest)}; left whole: {_untouched(kb)}"


# --- every typed path is input ---------------------------------------------------------------


def _refused_as_input(kb: _Kb, data_dir: str) -> tuple[bool, str]:
    results = []
    for args in (("status",), ("query", "widget"), ("ingest", "text", "x", "--ref", "x"),
                 ("doctor",)):
        done = subprocess.run([*KBCTL, *args, "--data-dir", data_dir, "--json"],
                              cwd=kb.root, env=kb.env, text=True, capture_output=True,
                              timeout=DEADLINE_S, check=False)
        try:
            message = json.loads(done.stdout)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = ""
        ok = (done.returncode == 2 and bool(message) and "\n" not in message
              and "Traceback" not in done.stderr)
        results.append((args[0], ok, done.returncode, message[:120]))
    held = all(ok for _, ok, _, _ in results)
    worst = next((r for r in results if not r[1]), results[0])
    return held, f"{worst[0]}: exit {worst[2]}: {worst[3]}"


def _symlink_loop(kb: _Kb) -> tuple[bool, str]:
    (kb.root / "a").symlink_to("b")
    (kb.root / "b").symlink_to("a")
    return _refused_as_input(kb, "a/kb")


def _long_name(kb: _Kb) -> tuple[bool, str]:
    return _refused_as_input(kb, "d" * 5000)


def _pg_is_a_file(kb: _Kb) -> tuple[bool, str]:
    kb.data_dir.mkdir()
    kb.pgdata.write_text("not a database")
    held, detail = _refused_as_input(kb, str(kb.data_dir))
    return held and kb.pgdata.read_text() == "not a database", detail


def _data_dir_is_a_file(kb: _Kb) -> tuple[bool, str]:
    kb.data_dir.write_text("a file")
    return _refused_as_input(kb, str(kb.data_dir))


ATTACKS: list[tuple[str, str, Callable[[Path], tuple[bool, str]]]] = [
    (OWNER, "second PID namespace joins the running server",
     _with_kb("ns-join", _second_namespace_joins)),
    (OWNER, "unreachable live holder is named, not replaced",
     _with_kb("ns-unreachable", _unreachable_holder_named)),
    (OWNER, "SIGKILL of the only server heals", _with_kb("sigkill", _sigkill_heals)),
    (REPAIRS, "doctor on a user's pg folder", _with_kb("doctor-user", _doctor_on_users_folder)),
    (REPAIRS, "ingest on a user's pg folder", _with_kb("ingest-user", _ingest_on_users_folder)),
    (PATHS, "data dir in a symlink loop", _with_kb("loop", _symlink_loop)),
    (PATHS, "5,000-character data dir name", _with_kb("long", _long_name)),
    (PATHS, "pg is a file", _with_kb("pg-file", _pg_is_a_file)),
    (PATHS, "data dir is a file", _with_kb("dir-file", _data_dir_is_a_file)),
]
