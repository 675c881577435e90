"""The benchmarks' measuring lock is the shell's flock: while one holds it, another run waits."""

import shutil

import pytest

from iolab import children, measuring_lock


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is not installed")
def test_a_held_lock_keeps_a_shell_flock_out_until_it_is_let_go(tmp_path):
    path = tmp_path / "measure.lock"
    with measuring_lock.held(path):
        assert children.run(["flock", "--nonblock", path, "true"], timeout_s=10).returncode == 1
    assert children.run(["flock", "--nonblock", path, "true"], timeout_s=10).returncode == 0


def test_no_path_means_no_lock():
    with measuring_lock.held(None):
        pass
