"""`--cluster local:N` leaves nothing in the temporary folder: its workers' scratch space
(Dask's `dask-scratch-space/`) lives in a folder of the cluster's own, removed when the
cluster closes (issue 27 §6)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.cli.support import check
from tests.offline.many_ranks import write_ranks
from tuidebug.offline.check.cluster_connect import open_runner


@pytest.fixture
def fresh_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty TMPDIR for this process and the workers it starts."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer
    assert tempfile.gettempdir() == str(tmp)
    return tmp


@pytest.mark.timeout(180)
def test_a_local_cluster_check_leaves_no_scratch_space(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fresh_tmp: Path
) -> None:
    dump = tmp_path / "dump"
    write_ranks(dump, ranks=2, iterations=2)
    code, _out, err = check(capsys, str(dump), "--watch", "TO", "--cluster", "local:2")
    assert code in (0, 1), err
    assert not list(fresh_tmp.rglob("dask-scratch-space")), sorted(fresh_tmp.rglob("*"))
    assert list(fresh_tmp.iterdir()) == []


@pytest.mark.timeout(120)
def test_a_runner_closed_with_its_session_leaves_no_scratch_space(fresh_tmp: Path) -> None:
    runner = open_runner("local:1")
    runner.close()
    assert list(fresh_tmp.iterdir()) == []


def test_a_client_that_fails_to_close_still_closes_its_local_cluster(
    monkeypatch: pytest.MonkeyPatch, fresh_tmp: Path
) -> None:
    """`client.close()` raising (a lost scheduler) must not skip the local cluster's close
    and the removal of its scratch folder."""
    import distributed

    from tuidebug.offline.check import cluster_connect

    closed: list[str] = []

    class FakeCluster:
        def close(self) -> None:
            closed.append("cluster")

    class FakeClient:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def close(self) -> None:
            raise OSError("the scheduler is gone")

    monkeypatch.setattr(cluster_connect, "_local_cluster", lambda *a: FakeCluster())
    monkeypatch.setattr(distributed, "Client", FakeClient)
    with (
        pytest.raises(OSError, match="the scheduler is gone"),
        cluster_connect.connect("local:1"),
    ):
        assert len(list(fresh_tmp.iterdir())) == 1  # the scratch folder
    assert closed == ["cluster"]
    assert list(fresh_tmp.iterdir()) == []
