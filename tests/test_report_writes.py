"""Report files are replaced whole: a write that fails (a full disk, a file-size limit)
leaves the old file, such as the baseline the next CI run reads, and no temporary file."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kbctl.errors import EnvironmentFailure, InputError
from kbctl.render.writes import write_report_file

WRITE_OVER_THE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from kbctl.errors import KbctlError
from kbctl.render.writes import write_report_file
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_report_file(Path(sys.argv[1]), "x" * 10000, "the report (--save-baseline)")
except KbctlError as exc:
    print(exc.exit_code, exc)
"""


def test_a_failed_write_keeps_the_old_report_and_leaves_no_temporary_file(
        tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"old": true}\n')
    done = subprocess.run([sys.executable, "-c", WRITE_OVER_THE_LIMIT, str(baseline)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.startswith(f"2 {baseline}: cannot write the report (--save-baseline)")
    assert baseline.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_a_report_replaces_the_old_one_and_keeps_its_permissions(tmp_path: Path) -> None:
    report = tmp_path / "deep" / "report.json"
    write_report_file(report, "first", "the report")
    report.chmod(0o640)
    write_report_file(report, "second", "the report")
    assert report.read_text() == "second"
    assert stat.S_IMODE(report.stat().st_mode) == 0o640
    write_report_file(report, "+", "the report", append=True)
    assert report.read_text() == "second+"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_device_is_the_environments_failure_and_is_written_in_place() -> None:
    """``--junit /dev/full`` (or ``/dev/stdout``) is written to, never renamed over."""
    with pytest.raises(EnvironmentFailure) as info:
        write_report_file(Path("/dev/full"), "x" * 100000, "the JUnit report (--junit)")
    assert info.value.exit_code == 3 and "No space left on device" in str(info.value)
    assert stat.S_ISCHR(Path("/dev/full").stat().st_mode)


def test_a_path_that_cannot_be_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError):
        write_report_file(tmp_path / "dir", "x", "the report (--save-baseline)")


def test_a_report_behind_a_symlink_replaces_the_file_and_keeps_the_link(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "baseline.json"
    shared.parent.mkdir()
    shared.write_text("old")
    link = tmp_path / "baseline.json"
    link.symlink_to(shared)
    write_report_file(link, "new", "the report (--save-baseline)")
    assert link.is_symlink() and shared.read_text() == "new"
