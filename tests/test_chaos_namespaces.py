"""One data directory used at once from this PID namespace and from another (``unshare -p``,
as a devcontainer on the same checkout), on real processes: the second one joins the
running server through its socket, never removes its lock files and never starts a second
postmaster; SIGKILL at random points (a kbctl, the postmaster, the whole other namespace)
heals, and every text a command reported written reads back whole."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from .test_chaos_server import COMMAND_DEADLINE, Box, dead, fresh_root, ok, wait_until

UNSHARE = shutil.which("unshare")
ROUNDS = 6


def _unshare_works() -> bool:
    if UNSHARE is None:
        return False
    try:
        done = subprocess.run([UNSHARE, "-p", "-f", "--mount-proc", "true"],
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


pytestmark = [
    pytest.mark.skipif(not _unshare_works(), reason="unshare -p is not permitted here"),
    pytest.mark.timeout(900),
]


def in_namespace(box: Box, *args: str, ipc: bool = False, linger: float | None = None
                 ) -> list[str]:
    """The command line of a kbctl run in a new PID namespace (and IPC namespace, where
    PostgreSQL's own shared-memory check cannot see the other server)."""
    assert UNSHARE is not None
    flags = ["-p", "-f", "--kill-child", "--mount-proc"] + (["-i"] if ipc else [])
    env = ["env", f"KBCTL_SERVER_LINGER={linger}"] if linger is not None else []
    return [UNSHARE, *flags, *env, *box.argv(*args)]


def postmasters(box: Box) -> list[psutil.Process]:
    """Every postmaster of the box's data directory, in any namespace below this one."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and "-D" in cmd and str(box.pgdata) in cmd:
            found.append(proc)
    return found


class Sampler:
    """Counts the postmasters of a data directory while a round runs: never two."""

    def __init__(self, box: Box) -> None:
        self.box = box
        self.most = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            alive = [p for p in postmasters(self.box) if not dead(p.pid)]
            self.most = max(self.most, len(alive))
            self.stop.wait(0.02)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def starts(box: Box) -> int:
    try:
        return (box.pgdata / "log").read_text(errors="replace").count("starting PostgreSQL")
    except OSError:
        return 0


@pytest.fixture
def kb() -> Iterator[Box]:
    b = Box(fresh_root())
    try:
        ok(b.run("ingest", "text", "The widget spins clockwise.", "--ref", "widgets",
                 linger=0))
        yield b
    finally:
        b.cleanup()


def test_a_second_namespace_joins_the_running_server(kb: Box) -> None:
    """The case that started two postmasters: a server kept up here, an ingest from a PID
    and IPC namespace of its own."""
    ok(kb.run("status", linger=60))
    pid_file = (kb.pgdata / "postmaster.pid").read_text()
    before = starts(kb)
    # a user of this namespace (this test's own process), whose pid the other one cannot
    # judge: it must not be dropped as the handle of an exited process
    from kbctl.embedded.server import change_handles, server_lock

    with server_lock(kb.data_dir):
        change_handles(kb.pgdata, add=[os.getpid()])
    with Sampler(kb) as sampler:
        done = subprocess.run(
            in_namespace(kb, "ingest", "text", "Gears mesh at ninety degrees.", "--ref",
                         "gears", "--json", ipc=True),
            cwd=kb.root, env=kb.env, text=True, capture_output=True,
            timeout=COMMAND_DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 1
    assert "removed the stale" not in done.stderr
    assert (kb.pgdata / "postmaster.pid").read_text() == pid_file
    assert starts(kb) == before and sampler.most == 1
    assert os.getpid() in kb.handles()
    with server_lock(kb.data_dir):
        change_handles(kb.pgdata, drop=[os.getpid()])
    # and the other way round: this namespace joins a server the other one started
    subprocess.run(kb.argv("doctor"), env=kb.env, capture_output=True, timeout=60,
                   check=False)
    for proc in postmasters(kb):
        proc.kill()
    wait_until(lambda: not postmasters(kb), 30, "the server dies")
    holder = subprocess.Popen(
        [UNSHARE or "unshare", "-p", "-f", "--kill-child", "--mount-proc", "sh", "-c",
         f"{' '.join(map(_quote, kb.argv('status')))} >/dev/null 2>&1; sleep 600"],
        cwd=kb.root, env=kb.env | {"KBCTL_SERVER_LINGER": "600"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kb.started.append(holder)  # type: ignore[arg-type]
    wait_until(lambda: postmasters(kb), COMMAND_DEADLINE, "the other namespace starts it")
    pid_file = wait_until(lambda: _ready_pid_file(kb), COMMAND_DEADLINE, "it is ready")
    query = ok(kb.run("query", "gears", "--json"))
    assert json.loads(query.stdout)["results"][0]["title"] == "gears"
    assert (kb.pgdata / "postmaster.pid").read_text() == pid_file, query.stderr
    assert len(postmasters(kb)) == 1
    doctor = json.loads(ok(kb.run("doctor", "--json")).stdout)
    assert doctor["running"] and doctor["ok"], doctor
    holder.kill()
    holder.wait(timeout=30)


def _ready_pid_file(box: Box) -> str | None:
    try:
        text = (box.pgdata / "postmaster.pid").read_text()
    except OSError:
        return None
    return text if text.rstrip().endswith("ready") else None


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def test_a_server_of_another_namespace_out_of_reach_is_named_not_replaced(kb: Box) -> None:
    """A live holder that a process in another PID namespace can neither see nor reach
    through its socket (here: the pid file names a socket directory that is not there,
    as for a container that mounts the checkout elsewhere): PostgreSQL's shared-memory
    check finds it in use, so the command ends with exit 3 naming it, and its pid file
    stays."""
    ok(kb.run("status", linger=60))
    pid_file = kb.pgdata / "postmaster.pid"
    lines = pid_file.read_text().splitlines()
    if not _shm_listed(lines[6]):
        pytest.skip("this kernel's System V shared memory table cannot be read")
    lines[4] = str(kb.root / "elsewhere")
    pid_file.write_text("\n".join(lines) + "\n")
    refused = subprocess.run(in_namespace(kb, "query", "widget", "--json"), cwd=kb.root,
                             env=kb.env, text=True, capture_output=True,
                             timeout=COMMAND_DEADLINE, check=False)
    assert refused.returncode == 3, refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert f"is in use by the PostgreSQL server with pid {lines[0]}" in error["message"]
    assert "cannot reach" in error["message"]
    assert pid_file.read_text().splitlines() == lines
    assert len(postmasters(kb)) == 1


def _shm_listed(line: str) -> bool:
    try:
        table = Path("/proc/sysvipc/shm").read_text()
    except OSError:
        return False
    key = line.split()[0] if line.split() else ""
    return any(row.split()[:1] == [key] for row in table.splitlines()[1:])


def test_chaos_two_namespaces_and_sigkill_keep_the_data_whole(kb: Box) -> None:
    """Rounds of a kbctl here and one in another namespace at once, with a SIGKILL at a
    random moment of one of them, of the postmaster, or of the other namespace whole.
    Never two postmasters; each command ends 0, 3 with a named holder, or killed; every
    text a command reported written reads back whole; the next command heals."""
    rng = random.Random(int(os.environ.get("KBCTL_CHAOS_SEED", "51")))
    written: dict[str, str] = {}
    for n in range(ROUNDS):
        here_ref, there_ref = f"here{n}", f"there{n}"
        here_text = f"Chaosmark round {n} here: the lever{n} moves the cam{n}."
        there_text = f"Chaosmark round {n} there: the spring{n} winds the drum{n}."
        with Sampler(kb) as sampler:
            here = subprocess.Popen(
                kb.argv("ingest", "text", here_text, "--ref", here_ref, "--json"),
                cwd=kb.root, env=kb.env, text=True, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            there = subprocess.Popen(
                in_namespace(kb, "ingest", "text", there_text, "--ref", there_ref, "--json",
                             ipc=rng.random() < 0.5),
                cwd=kb.root, env=kb.env, text=True, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            kb.started += [here, there]
            threading.Event().wait(rng.uniform(0.0, 2.5))
            victim = rng.choice(["here", "there", "postmaster", "none"])
            if victim == "here":
                here.send_signal(signal.SIGKILL)
            elif victim == "there":
                there.send_signal(signal.SIGKILL)  # --kill-child: the whole namespace
            elif victim == "postmaster":
                for proc in postmasters(kb):
                    with _gone():
                        proc.send_signal(signal.SIGKILL)
            outs = {ref: (proc, *proc.communicate(timeout=COMMAND_DEADLINE))
                    for ref, proc in ((here_ref, here), (there_ref, there))}
        assert sampler.most <= 1, f"round {n}: {sampler.most} postmasters at once"
        for ref, (proc, out, err) in outs.items():
            assert "Traceback" not in err, err
            assert proc.returncode in (0, 3, -signal.SIGKILL), (n, ref, proc.returncode, err)
            if proc.returncode == 3:
                assert json.loads(out)["error"]["message"], err
            if proc.returncode == 0:
                written[ref] = here_text if ref == here_ref else there_text
        # the next command heals whatever the round left, and everything written is whole
        found = json.loads(ok(kb.run("query", "chaosmark", "-k", "50", "--json")).stdout)
        texts = {hit["title"]: hit["text"] for hit in found["results"]}
        for ref, text in written.items():
            assert text in texts.get(ref, ""), (n, ref, texts)
        assert len([p for p in postmasters(kb) if not dead(p.pid)]) <= 1
    assert "clockwise" in json.loads(ok(kb.run("query", "widget", "--json")).stdout)[
        "results"][0]["text"]
    doctor = kb.run("doctor", "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["ok"], doctor.stdout


class _gone:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, psutil.Error)
