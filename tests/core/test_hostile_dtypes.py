"""Dtype surface: tensors of types MindSpore's summary never handled must not be checked
silently wrong.

Complex tensors (complex64/complex128) were skipped by the condition engine, so NaN/Inf in
them was never reported (`check` printed `[]` and exited 0). Now NaN/Inf conditions hit when
either part of an element is NaN/Inf, and every other statistic is taken over the magnitudes
|z| (the change conditions over |x − p| of the complex difference).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tuidebug.cli import main as cli_main
from tuidebug.core import condition_catalogue as c
from tuidebug.core import scan_engine
from tuidebug.core.error_codes import ErrorCode
from tuidebug.core.tensor import histogram, tensor_statistics
from tuidebug.offline.writer.dump_writer import DumpWriter, NodeDef, ParamDef

_CT = c.ConditionType
MUL = "Default/net/Mul-op0"
ADD = "Default/net/Add-op1"
W = "w"


def _req(cond: int, **params: float) -> c.CheckRequest:
    return c.CheckRequest(int(cond), tuple(c.Param(k, v, False) for k, v in params.items()))


def _hit(tensor: np.ndarray, req: c.CheckRequest, prev: np.ndarray | None = None) -> bool:
    return scan_engine.evaluate(tensor, [req], prev)[0].hit


def _actual(tensor: np.ndarray, req: c.CheckRequest, prev: np.ndarray | None = None) -> float:
    [result] = scan_engine.evaluate(tensor, [req], prev)
    [param] = result.params
    assert param.actual is not None, result
    return param.actual


# ----------------------------------------------------------------------- the dump
def _undeclare_dtypes(pb_path: Path, names: set[str]) -> None:
    """Clear the declared element type of `names`' outputs: the graph's DataType enum has
    no complex numbers (a newer exporter writes numbers this schema does not know), so to
    the reader such a tensor's dtype is simply not declared."""
    from tuidebug._proto import debug_graph_pb2 as pb

    model = pb.ModelProto()
    model.ParseFromString(pb_path.read_bytes())
    for param in model.graph.parameters:
        if param.name in names:
            param.type.tensor_type.ClearField("elem_type")
    for node in model.graph.node:
        if node.full_name in names:
            node.output_type.tensor_type.ClearField("elem_type")
    pb_path.write_bytes(model.SerializeToString())


def _put(folder: Path, stem: str, array: np.ndarray) -> None:
    """Replace the float32 placeholder file of `stem` with `array`, named as MindSpore
    names the type (`Complex64`, `Complex128`)."""
    [old] = folder.glob(f"{stem}.*.npy")
    old.unlink()
    kind = {np.complex64: "Complex64", np.complex128: "Complex128"}[array.dtype.type]
    np.save(old.with_name(old.name.replace(".Float32.npy", f".{kind}.npy")), array)


def complex_dump(root: Path, iterations: dict[int, dict[str, np.ndarray]]) -> Path:
    """A one-graph dump whose `w` (complex64 (3, 4)), Mul (complex128 (8,)) and Add
    (float32 (8,)) outputs hold the given arrays per iteration."""
    writer = DumpWriter(root, net_name="Net", start_timestamp=1000)
    pb_path = writer.add_graph(
        0,
        [
            NodeDef(MUL, "Mul", [W], dtype=np.float32, shape=(8,)),
            NodeDef(ADD, "Add", [MUL], dtype=np.float32, shape=(8,)),
        ],
        [ParamDef(W, np.float32, (3, 4))],
    )
    for it, arrays in iterations.items():
        placeholders = {
            (name, "output", 0): np.zeros(arr.shape, np.float32)
            for name, arr in arrays.items()
            if arr.dtype.kind == "c"
        }
        reals = {(n, "output", 0): a for n, a in arrays.items() if a.dtype.kind != "c"}
        folder = writer.write_iteration(0, it, {**placeholders, **reals})
        for name, arr in arrays.items():
            if arr.dtype.kind == "c":
                stem = "Parameter.w" if name == W else f"Mul.{name.replace('/', '_')}"
                _put(folder, stem, arr)
    writer.finish()
    _undeclare_dtypes(pb_path, {W, MUL})
    return root


def _clean() -> dict[str, np.ndarray]:
    return {
        W: (np.arange(12, dtype=np.float32) + 1j).reshape(3, 4).astype(np.complex64),
        MUL: np.linspace(1, 2, 8) * (1 - 1j),
        ADD: np.linspace(1, 2, 8).astype(np.float32),
    }


@pytest.fixture
def nan_inf_dump(tmp_path: Path) -> Path:
    it1 = _clean()
    it1[W] = it1[W].copy()
    it1[W][1, 2] = complex(3.0, np.nan)  # NaN only in the imaginary part
    it1[MUL] = it1[MUL].copy()
    it1[MUL][5] = complex(-np.inf, 2.0)  # Inf only in the real part
    return complex_dump(tmp_path / "dump", {0: _clean(), 1: it1})


def _check_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict]]:
    code = cli_main(["check", *argv, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "warning" not in err, err  # the complex files are shown under their nodes
    return code, json.loads(out)


def test_check_reports_nan_and_inf_inside_complex_tensors(
    capsys: pytest.CaptureFixture[str], nan_inf_dump: Path
) -> None:
    code, hits = _check_json(capsys, str(nan_inf_dump), "--watch", "TO")
    assert code == 1
    found = sorted((h["iteration"], h["node"]) for h in hits)
    assert found == [(1, MUL), (1, W)]


def test_check_statistics_of_complex_tensors_are_magnitudes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    it0 = _clean()
    dump = complex_dump(tmp_path / "dump", {0: it0})
    # |w| max = |11 + 1j| = 11.045…; |Mul| max = 2·√2 = 2.83; Add (real) max = 2
    code, hits = _check_json(capsys, str(dump), "--watch", "TL:max_gt=2.5")
    assert code == 1
    assert sorted(h["node"] for h in hits) == [MUL, W]
    actual = {h["node"]: h["params"][0]["actual"] for h in hits}
    assert actual[W] == pytest.approx(float(np.abs(it0[W].astype(np.complex128)).max()))
    assert actual[MUL] == pytest.approx(2 * math.sqrt(2))


def test_api_check_watchpoints_sees_complex_nan(nan_inf_dump: Path) -> None:
    from tuidebug.api import DumpAnalyzer, TensorOverflowCondition, Watchpoint

    analyzer = DumpAnalyzer(str(nan_inf_dump))
    tensors = analyzer.select_tensors(".*", use_regex=True)
    watch = Watchpoint(tensors, TensorOverflowCondition())
    hits = analyzer.check_watchpoints([watch])
    found = sorted((h.tensor.iteration, h.tensor.node.name) for h in hits)
    assert found == [(1, MUL), (1, W)]


# ------------------------------------------------------------------------- engine
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [7, scan_engine.KERNEL_MIN_ELEMENTS + 3])
def test_nan_or_inf_in_either_part_is_reported(dtype: type, n: int) -> None:
    clean = (np.linspace(-1, 1, n) + 0.5j).astype(dtype)
    assert not _hit(clean, _req(_CT.GENERAL_OVERFLOW))
    for value, nan, inf in [
        (complex(np.nan, 0), True, False),
        (complex(0, np.nan), True, False),
        (complex(np.inf, 0), False, True),
        (complex(0, -np.inf), False, True),
        (complex(np.inf, np.nan), True, True),  # |z| = inf here: the NaN must not be lost
    ]:
        x = clean.copy()
        x[n // 2] = value
        assert _hit(x, _req(_CT.HAS_NAN)) is nan, value
        assert _hit(x, _req(_CT.HAS_INF)) is inf, value
        assert _hit(x, _req(_CT.GENERAL_OVERFLOW)), value
        # statistics conditions are refused on NaN/Inf like any tensor's (error bits)
        [res] = scan_engine.evaluate(x, [_req(_CT.TOO_LARGE, max_gt=0.0)])
        assert res.error_code == (ErrorCode.NAN if nan else 0) | (ErrorCode.INF if inf else 0)


def test_complex64_parts_near_float32_max_are_not_overflow() -> None:
    # |z| of these finite parts exceeds float32's range: still no Inf in the tensor
    big = float(np.finfo(np.float32).max)
    x = np.full(10, complex(big, big), np.complex64)
    assert not _hit(x, _req(_CT.GENERAL_OVERFLOW))
    assert _actual(x, _req(_CT.TOO_LARGE, max_gt=0.0)) == pytest.approx(math.hypot(big, big))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_statistics_are_those_of_the_magnitudes(dtype: type) -> None:
    rng = np.random.default_rng(5)
    x = (rng.normal(size=1000) + 1j * rng.normal(size=1000)).astype(dtype)
    x[:100] = 0
    mag = np.abs(x.astype(np.complex128))
    assert _actual(x, _req(_CT.TOO_LARGE, max_gt=0.0)) == pytest.approx(mag.max())
    assert _actual(x, _req(_CT.TOO_SMALL, min_lt=1.0)) == 0.0
    assert _actual(x, _req(_CT.TOO_LARGE, mean_gt=0.0)) == pytest.approx(mag.mean())
    assert _actual(x, _req(_CT.TOO_LARGE, abs_mean_gt=0.0)) == pytest.approx(mag.mean())
    assert _actual(x, _req(_CT.SD_GT, param=0.0)) == pytest.approx(mag.std(ddof=1))
    assert _actual(x, _req(_CT.ALL_ZERO, zero_percentage_ge=5.0)) == pytest.approx(10.0)
    tr = c.CheckRequest(
        int(_CT.RANGE),
        (
            c.Param("range_start_inclusive", 0.5, False),
            c.Param("range_end_inclusive", 1.5, False),
            c.Param("range_percentage_lt", 50.0, False),
        ),
    )
    [res] = scan_engine.evaluate(x, [tr])
    expected = 100.0 * np.count_nonzero((mag >= 0.5) & (mag <= 1.5)) / mag.size
    assert res.params[2].actual == pytest.approx(expected)


def test_change_conditions_use_the_complex_difference() -> None:
    # a phase rotation keeps every magnitude: it is still a change
    prev = np.exp(1j * np.linspace(0, 3, 50)).astype(np.complex128)
    x = prev * 1j
    assert np.allclose(np.abs(x), np.abs(prev))
    assert not _hit(x, _req(_CT.NOT_CHANGED, rtol=1e-5), prev)
    assert _hit(prev.copy(), _req(_CT.NOT_CHANGED, rtol=1e-5), prev)
    ratio = _actual(x, _req(_CT.CHANGE_TOO_LARGE, abs_mean_update_ratio_gt=0.1), prev)
    expected = np.abs(x - prev).mean() / (np.abs(prev).mean() + c.UPDATE_RATIO_EPSILON)
    assert ratio == pytest.approx(expected)
    # a real previous value against a complex one: the same rule
    real_prev = prev.real.copy()
    ratio = _actual(x, _req(_CT.CHANGE_TOO_SMALL, abs_mean_update_ratio_lt=0.1), real_prev)
    expected = np.abs(x - real_prev).mean() / (np.abs(real_prev).mean() + 1e-9)
    assert ratio == pytest.approx(expected)


def test_complex_tensor_statistics_for_the_viewer() -> None:
    # the node pane and the trace flag NaN/Inf from these counts: a complex tensor used to
    # raise here, so its NaN went unflagged
    x = np.array(
        [3 + 4j, 0, complex(np.nan, 1), complex(1, -np.inf), complex(np.inf, np.nan), 1j],
        np.complex64,
    )
    stats = tensor_statistics(x, chunk=4)
    assert (stats.nan_count, stats.pos_inf_count, stats.neg_inf_count) == (2, 1, 0)
    assert (stats.zero_count, stats.positive_count, stats.negative_count) == (1, 2, 0)
    assert (stats.min, stats.max, stats.mean) == (0.0, 5.0, 2.0)
    assert stats.magnitude
    assert stats.summary_line().startswith("complex64<6> |z|∈[0, 5] μ=2")
    hist = histogram(x, 5, stats=stats)
    assert hist.counts.tolist() == [1, 1, 0, 0, 1]
