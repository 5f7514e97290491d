"""The condition catalogue (spec §3.1) and the check engine (spec §3.5, §3.6)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tuidebug.core import c_kernel, kernels
from tuidebug.core import scan_engine as C
from tuidebug.core.condition_catalogue import (
    CONDITIONS,
    CheckRequest,
    CheckResult,
    ConditionType,
    Param,
    UnknownConditionError,
    conditions_by_target,
    get_condition,
)
from tuidebug.core.graph import Category
from tuidebug.core.scan_engine import evaluate

CT = ConditionType
BF16 = np.dtype(ml_dtypes.bfloat16)


# ------------------------------------------------------------------------------ helpers
def request(key: str, previous: bool = False, **values: float) -> CheckRequest:
    """A wire request as MindInsight builds it: every parameter, unset ones disabled."""
    spec = get_condition(key)
    params = []
    for p in spec.params:
        if p.name in values:
            params.append(Param(p.name, float(values[p.name]), False))
        elif not p.support_disable:
            params.append(Param(p.name, float(p.default or 0.0), False))
        else:
            params.append(Param(p.name, 0.0, True))
    return CheckRequest(spec.proto, tuple(params))


def legacy(cond: int, value: float) -> CheckRequest:
    return CheckRequest(cond, (Param("param", value, False),))


def one(x: object, req: CheckRequest, prev: object = None, **kw: int) -> CheckResult:
    prev_arr = None if prev is None else np.asarray(prev)
    return evaluate(np.asarray(x), [req], prev_arr, **kw)[0]


def actual(res: CheckResult, name: str) -> float | None:
    return next(p for p in res.params if p.name == name).actual


def phit(res: CheckResult, name: str) -> bool:
    return next(p for p in res.params if p.name == name).hit


# ---------------------------------------------------------------------------- catalogue
def test_catalogue_order_abbreviations_and_wire_numbers() -> None:
    expected = [
        ("WI", "weight_initialization", 14),
        ("WO", "weight_overflow", 13),
        ("WL", "weight_too_large", 15),
        ("WS", "weight_too_small", 16),
        ("GV", "gradient_vanishing", 16),
        ("GL", "gradient_too_large", 15),
        ("GE", "gradient_exploding", 13),
        ("TO", "tensor_overflow", 13),
        ("OO", "operator_overflow", 2),
        ("TL", "tensor_too_large", 15),
        ("TS", "tensor_too_small", 16),
        ("TZ", "tensor_all_zero", 17),
        ("WNC", "weight_not_changed", 20),
        ("WCL", "weight_change_too_large", 18),
        ("WCS", "weight_change_too_small", 19),
        ("AR", "activation_range", 21),
        ("TR", "tensor_range", 21),
    ]
    got = [(c.abbr, c.id, int(c.proto)) for c in CONDITIONS.values()]
    assert got == expected
    assert [c.id for c in CONDITIONS.values()] == list(CONDITIONS)


def test_parameter_order_and_flags() -> None:
    names = {c.abbr: c.param_names for c in CONDITIONS.values()}
    assert names["TL"] == ("abs_mean_gt", "max_gt", "min_gt", "mean_gt")
    assert names["GV"] == ("abs_mean_lt", "max_lt", "min_lt", "mean_lt")
    assert names["WI"] == ("zero_percentage_ge", "max_gt", "min_lt")
    assert names["WNC"] == ("rtol", "atol", "equal_nan")
    assert names["WCL"] == ("abs_mean_update_ratio_gt", "epsilon")
    assert names["WCS"] == ("abs_mean_update_ratio_lt", "epsilon")
    assert (
        names["TR"]
        == names["AR"]
        == (
            "range_start_inclusive",
            "range_end_inclusive",
            "range_percentage_lt",
            "range_percentage_gt",
            "max_min_lt",
            "max_min_gt",
        )
    )
    for abbr in ("TO", "WO", "GE", "OO"):
        assert names[abbr] == ()
    wnc = get_condition("WNC")
    assert [p.visible for p in wnc.params] == [True, False, False]
    assert [p.support_disable for p in wnc.params] == [True, False, False]
    assert wnc.param("atol").default == 1e-8
    assert wnc.param("equal_nan").is_bool and wnc.param("equal_nan").default == 0.0
    assert get_condition("WCL").param("epsilon").default == 1e-9
    assert [p.name for p in wnc.visible_params] == ["rtol"]
    assert get_condition("TR").param("range_start_inclusive").kind == "support"
    assert get_condition("TR").param("range_percentage_lt").requires == (
        "range_start_inclusive",
        "range_end_inclusive",
    )
    assert {c.abbr for c in CONDITIONS.values() if c.needs_prev} == {"WNC", "WCL", "WCS"}
    assert [c.abbr for c in CONDITIONS.values() if c.ascend_only] == ["OO"]


def test_targets() -> None:
    target = {c.abbr: c.target for c in CONDITIONS.values()}
    assert target["WI"] is Category.WEIGHT and target["WNC"] is Category.WEIGHT
    assert target["GV"] is Category.GRADIENT and target["GE"] is Category.GRADIENT
    assert target["AR"] is Category.ACTIVATION
    assert target["TR"] is Category.TENSOR and target["OO"] is Category.TENSOR


def test_get_condition_accepts_id_or_abbreviation_in_any_case() -> None:
    assert get_condition("tl") is CONDITIONS["tensor_too_large"]
    assert get_condition("Tensor_Too_Large") is CONDITIONS["tensor_too_large"]
    assert get_condition(" WCL ") is CONDITIONS["weight_change_too_large"]
    spec = CONDITIONS["tensor_range"]
    assert get_condition(spec) is spec


def test_unknown_condition_is_one_sentence_listing_abbreviations() -> None:
    with pytest.raises(UnknownConditionError) as err:
        get_condition("tensor_too_big")
    text = str(err.value)
    assert "tensor_too_big" in text and "TL" in text and "WNC" in text
    assert text.endswith(".") and text.count(". ") == 0
    assert isinstance(err.value, ValueError)


def test_conditions_by_target_groups_in_rest_order_sorted_by_id() -> None:
    groups = conditions_by_target()
    assert list(groups) == [
        Category.TENSOR,
        Category.WEIGHT,
        Category.ACTIVATION,
        Category.GRADIENT,
    ]
    assert [c.id for c in groups[Category.TENSOR]] == [
        "operator_overflow",
        "tensor_all_zero",
        "tensor_overflow",
        "tensor_range",
        "tensor_too_large",
        "tensor_too_small",
    ]
    assert [c.abbr for c in groups[Category.ACTIVATION]] == ["AR"]
    assert [c.id for c in groups[Category.GRADIENT]] == [
        "gradient_exploding",
        "gradient_too_large",
        "gradient_vanishing",
    ]
    assert sum(len(v) for v in groups.values()) == 17


def test_availability_by_backend_and_step() -> None:
    ids = lambda groups: {c.abbr for v in groups.values() for c in v}  # noqa: E731
    assert ids(conditions_by_target()) == {c.abbr for c in CONDITIONS.values()}
    gpu_later = ids(conditions_by_target(backend="GPU", step=2))
    assert "OO" not in gpu_later and "WI" not in gpu_later and len(gpu_later) == 15
    assert {"OO", "WI"} <= ids(conditions_by_target(backend="Ascend", step=0))
    assert "OO" in ids(conditions_by_target(step=5)) and "WI" not in ids(
        conditions_by_target(step=5)
    )


def test_the_catalogue_loads_without_the_engine() -> None:
    """Whoever needs a condition's name, parameters or error bits (a picker, a spec parser,
    the API's classes, --help) imports the catalogue: no numpy, threads or numba come with it."""
    code = (
        "import sys; import tuidebug.core.condition_catalogue, tuidebug.core.error_codes; "
        "heavy = ('numpy', 'numba', 'concurrent.futures', 'tuidebug.core.scan_engine'); "
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("zero_percentage_ge", [0.0, 100.0, 50.0], [-0.1, 100.1, math.nan]),
        ("max_gt", [-1e300, 0.0, 1e300], [math.inf, -math.inf, math.nan]),
        ("abs_mean_gt", [0.0, 1e30], [-1e-12, math.inf]),
        ("rtol", [0.0, 3.0], [-1.0, math.inf]),
        ("max_min_lt", [1e-30, 5.0], [0.0, -1.0, math.inf]),
        ("max_min_gt", [0.0, 5.0], [-1.0, math.inf]),
        ("range_percentage_lt", [0.0, 100.0], [-1.0, 100.5]),
        ("range_start_inclusive", [-1e6, 0.0], [math.inf, -math.inf]),
    ],
)
def test_param_check(name: str, good: list[float], bad: list[float]) -> None:
    spec = next(p for c in CONDITIONS.values() for p in c.params if p.name == name)
    for value in good:
        assert spec.check(value) is None
    for value in bad:
        problem = spec.check(value)
        assert problem is not None and name in problem and problem.endswith(".")


def test_param_check_of_hidden_and_bool_params() -> None:
    wnc = get_condition("WNC")
    assert wnc.param("atol").check(123.0) is None
    assert wnc.param("equal_nan").check(1.0) is None
    assert wnc.param("equal_nan").check(0.5) is not None
    text = wnc.param("rtol").check(-1.0)
    assert text is not None and "0 <= value < inf" in text


# ------------------------------------------------------------------ overflow conditions
@pytest.mark.parametrize("abbr", ["TO", "WO", "GE"])
def test_general_overflow(abbr: str) -> None:
    req = request(abbr)
    assert not one([1.0, 2.0], req).reported
    for bad in ([1.0, np.nan], [np.inf, 1.0], [-np.inf], [np.nan, np.inf, -np.inf]):
        res = one(np.array(bad, np.float32), req)
        assert res.hit and res.error_code == 0 and res.reported


def test_legacy_has_nan_and_has_inf_clear_errors() -> None:
    nan_req = CheckRequest(CT.HAS_NAN)
    inf_req = CheckRequest(CT.HAS_INF)
    assert one([np.nan, 1.0], nan_req) == CheckResult(True, 0, ())
    assert one([np.inf, 1.0], nan_req) == CheckResult(False, 0, ())
    assert one([np.nan, 1.0], inf_req) == CheckResult(False, 0, ())
    assert one([-np.inf, 1.0], inf_req) == CheckResult(True, 0, ())


def test_error_clearing_conditions_evaluate_their_parameters() -> None:
    """HAS_NAN/HAS_INF/GENERAL_OVERFLOW clear the error bits, so parameters they carry are
    evaluated on the NaN tensor: NaN never replaces the running max/min, NaN means stay NaN."""
    x = np.array([1.0, np.nan, 5.0, 0.0, -2.0, np.nan, 0.0, 3.0], np.float32)
    req = CheckRequest(
        CT.HAS_NAN,
        (
            Param("max_gt", 4.0, False),
            Param("min_lt", -1.0, False),
            Param("zero_percentage_ge", 25.0, False),
            Param("mean_gt", 0.0, False),
            Param("abs_mean_gt", 0.0, False),
        ),
    )
    for chunk in (1, 2, 3, 100):
        res, other = evaluate(x, [req, request("TL", max_gt=0.0)], chunk_elements=chunk)
        assert res.hit and res.error_code == 0
        assert [p.actual for p in res.params] == [5.0, -2.0, 25.0, None, None]
        assert [p.hit for p in res.params] == [True, True, True, False, False]
        assert other.error_code == 1 and not other.hit
    only_nan = CheckRequest(CT.GENERAL_OVERFLOW, (Param("max_gt", 0.0, False),))
    res = one(np.array([np.nan, np.nan]), only_nan)
    assert res.hit and res.params[0].actual == -np.finfo(np.float64).max  # never replaced


def test_operator_overflow_never_hits_from_values() -> None:
    res = one([np.nan, np.inf], CheckRequest(CT.IS_OVERFLOW))
    assert not res.reported


# ----------------------------------------------------------------- threshold conditions
@pytest.mark.parametrize("abbr", ["TL", "WL", "GL"])
def test_too_large_each_parameter(abbr: str) -> None:
    x = np.array([-3.0, 1.0, 2.0, 4.0])  # abs_mean 2.5, max 4, min -3, mean 1
    res = one(x, request(abbr, abs_mean_gt=2.0))
    assert res.hit and actual(res, "abs_mean_gt") == 2.5
    assert actual(res, "max_gt") is None  # disabled: untouched
    assert not one(x, request(abbr, abs_mean_gt=2.5)).hit  # strictly greater
    assert one(x, request(abbr, max_gt=3.9)).hit
    assert not one(x, request(abbr, max_gt=4.0)).hit
    assert one(x, request(abbr, min_gt=-3.5)).hit
    assert not one(x, request(abbr, min_gt=-3.0)).hit
    res = one(x, request(abbr, mean_gt=0.5))
    assert res.hit and actual(res, "mean_gt") == 1.0
    res = one(x, request(abbr, abs_mean_gt=10.0, max_gt=3.0))
    assert res.hit and not phit(res, "abs_mean_gt") and phit(res, "max_gt")
    assert actual(res, "abs_mean_gt") == 2.5  # evaluated even though it did not hit


@pytest.mark.parametrize("abbr", ["TS", "WS", "GV"])
def test_too_small_each_parameter(abbr: str) -> None:
    x = np.array([-3.0, 1.0, 2.0, 4.0])
    assert one(x, request(abbr, abs_mean_lt=2.6)).hit
    assert not one(x, request(abbr, abs_mean_lt=2.5)).hit
    assert one(x, request(abbr, max_lt=4.5)).hit
    assert not one(x, request(abbr, max_lt=4.0)).hit
    assert one(x, request(abbr, min_lt=-2.0)).hit
    assert one(x, request(abbr, mean_lt=1.5)).hit
    assert not one(x, request(abbr, mean_lt=1.0)).hit


@pytest.mark.parametrize(
    ("values", "code"),
    [([1.0, np.nan], 1), ([1.0, np.inf], 2), ([np.nan, -np.inf], 3), ([np.nan] * 3, 1)],
)
def test_nan_and_inf_set_error_bits_and_skip_parameters(values: list[float], code: int) -> None:
    res = one(np.array(values, np.float32), request("TL", abs_mean_gt=0.0, max_gt=-1.0))
    assert res.error_code == code and not res.hit and res.reported
    assert all(p.actual is None and not p.hit for p in res.params)


def test_mixed_plus_and_minus_inf() -> None:
    res = one(np.array([np.inf, -np.inf, 0.0]), request("TS", max_lt=1.0))
    assert res.error_code == 2 and not res.hit


def test_all_zero_and_negative_zero() -> None:
    req = request("TZ", zero_percentage_ge=100.0)
    res = one(np.array([0.0, -0.0, 0.0], np.float32), req)
    assert res.hit and actual(res, "zero_percentage_ge") == 100.0
    res = one(np.array([0.0, 1.0, -0.0, 2.0]), request("TZ", zero_percentage_ge=50.0))
    assert res.hit and actual(res, "zero_percentage_ge") == 50.0
    assert not one(np.array([0.0, 1.0, 2.0]), request("TZ", zero_percentage_ge=50.0)).hit


def test_weight_initialization() -> None:
    x = np.array([0.0, 0.0, 0.5, -0.25])
    assert one(x, request("WI", zero_percentage_ge=50.0)).hit
    assert not one(x, request("WI", zero_percentage_ge=60.0)).hit
    assert one(x, request("WI", max_gt=0.4)).hit
    assert one(x, request("WI", min_lt=-0.2)).hit
    assert not one(x, request("WI", max_gt=0.5, min_lt=-0.25)).hit


# ------------------------------------------------------------------------ range conditions
@pytest.mark.parametrize("abbr", ["TR", "AR"])
def test_range_bounds_are_inclusive(abbr: str) -> None:
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    res = one(
        x,
        request(abbr, range_start_inclusive=-1.0, range_end_inclusive=1.0, range_percentage_lt=90),
    )
    assert actual(res, "range_percentage_lt") == 80.0 and res.hit
    assert actual(res, "range_start_inclusive") is None  # support params: untouched
    res = one(
        x, request(abbr, range_start_inclusive=0.5, range_end_inclusive=0.5, range_percentage_gt=19)
    )
    assert actual(res, "range_percentage_gt") == 20.0 and res.hit


def test_range_with_one_bound_disabled_uses_infinity() -> None:
    x = np.array([-5.0, 0.0, 5.0, 10.0])
    res = one(x, request("TR", range_start_inclusive=5.0, range_percentage_lt=100))
    assert actual(res, "range_percentage_lt") == 50.0
    res = one(x, request("TR", range_end_inclusive=0.0, range_percentage_lt=100))
    assert actual(res, "range_percentage_lt") == 50.0


def test_range_with_both_bounds_disabled_leaves_percentage_untouched() -> None:
    x = np.array([1.0, 3.0])
    res = one(x, request("TR", range_percentage_lt=100.0, max_min_gt=1.0))
    assert actual(res, "range_percentage_lt") is None and not phit(res, "range_percentage_lt")
    assert actual(res, "max_min_gt") == 2.0 and res.hit


def test_range_start_above_end_counts_nothing() -> None:
    res = one(
        np.arange(10.0),
        request("TR", range_start_inclusive=5, range_end_inclusive=4, range_percentage_lt=1),
    )
    assert actual(res, "range_percentage_lt") == 0.0 and res.hit


def test_max_min() -> None:
    x = np.array([2.0, 2.5, 3.0])
    assert one(x, request("TR", max_min_lt=1.5)).hit
    assert not one(x, request("TR", max_min_lt=1.0)).hit
    res = one(x, request("AR", max_min_gt=0.5))
    assert res.hit and actual(res, "max_min_gt") == 1.0


def test_float32_range_compares_as_float64() -> None:
    # float32(0.1) is 0.10000000149..., so it lies above a float64 end bound of 0.1
    x = np.array([0.1, 0.2], np.float32)
    res = one(
        x, request("TR", range_start_inclusive=0.0, range_end_inclusive=0.1, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 0.0
    res = one(
        x, request("TR", range_start_inclusive=0.1, range_end_inclusive=1.0, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 100.0
    exact = float(np.float32(0.1))
    res = one(
        x,
        request(
            "TR", range_start_inclusive=exact, range_end_inclusive=exact, range_percentage_gt=0
        ),
    )
    assert actual(res, "range_percentage_gt") == 50.0
    res = one(
        x,
        request("TR", range_start_inclusive=-1e39, range_end_inclusive=1e39, range_percentage_gt=0),
    )
    assert actual(res, "range_percentage_gt") == 100.0


def test_integer_range_with_fractional_and_out_of_type_bounds() -> None:
    x = np.array([-128, -2, -1, 0, 1, 2, 3, 127], np.int8)
    res = one(
        x, request("TR", range_start_inclusive=-1.5, range_end_inclusive=2.5, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 50.0
    res = one(
        x, request("TR", range_start_inclusive=-1e6, range_end_inclusive=1e6, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 100.0
    res = one(
        x, request("TR", range_start_inclusive=200, range_end_inclusive=300, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 0.0
    res = one(x, request("TR", range_start_inclusive=127, range_percentage_gt=0))
    assert actual(res, "range_percentage_gt") == 12.5


# ----------------------------------------------------------------------- change conditions
def test_update_ratio_uses_fixed_epsilon() -> None:
    prev = np.array([1.0, -2.0, 3.0])
    x = np.array([1.5, -2.0, 2.0])
    expected = (1.5 / 3) / (6.0 / 3 + 1e-9)
    for eps in (1e-9, 1.0):
        req = request("WCL", abs_mean_update_ratio_gt=0.1, epsilon=eps)
        res = one(x, req, prev)
        assert res.hit and actual(res, "abs_mean_update_ratio_gt") == pytest.approx(
            expected, rel=1e-15
        )
        assert actual(res, "epsilon") is None
    res = one(x, request("WCS", abs_mean_update_ratio_lt=0.3), prev)
    assert res.hit
    assert not one(x, request("WCS", abs_mean_update_ratio_lt=0.2), prev).hit


def test_update_ratio_of_zero_previous() -> None:
    res = one([1.0, 1.0], request("WCL", abs_mean_update_ratio_gt=1e8), [0.0, 0.0])
    assert actual(res, "abs_mean_update_ratio_gt") == pytest.approx(1e9)
    assert res.hit


@pytest.mark.parametrize("abbr", ["WCL", "WCS", "WNC"])
def test_missing_previous_sets_error_bit_4(abbr: str) -> None:
    res = one([1.0, 2.0], request(abbr))
    assert res.error_code == 4 and not res.hit and res.reported
    assert all(p.actual is None for p in res.params)
    res = one([1.0, np.nan], request(abbr))
    assert res.error_code == 5
    res = one([np.inf, np.nan], request(abbr))
    assert res.error_code == 7


@pytest.mark.parametrize("abbr", ["WCL", "WCS"])
def test_previous_of_another_size_gives_nan_ratio(abbr: str) -> None:
    name = get_condition(abbr).params[0].name
    res = one([1.0, 2.0, 3.0], request(abbr, **{name: 0.5 if abbr == "WCL" else 1e9}), [1.0, 2.0])
    assert res == CheckResult(False, 0, res.params) and not res.reported
    assert actual(res, name) is None


def test_nan_or_inf_in_previous_gives_nan_ratio() -> None:
    for prev in ([1.0, np.nan], [np.inf, 1.0], [1.0, -np.inf]):
        res = one([1.0, 2.0], request("WCS", abs_mean_update_ratio_lt=1e9), prev)
        assert not res.reported and actual(res, "abs_mean_update_ratio_lt") is None


def test_not_changed() -> None:
    p = np.array([1.0, -2.0, 0.0])
    req = request("WNC")  # rtol disabled → 1e-5, atol hidden 1e-8
    assert one(p.copy(), req, p).hit
    assert one(p + np.array([1e-5, 0, 0]), req, p).hit  # within rtol·|p| + atol
    assert not one(p + np.array([1.1e-5, 0, 0]), req, p).hit
    assert one(p + np.array([0, 0, 9e-9]), req, p).hit
    assert not one(p + np.array([0, 0, 2e-8]), req, p).hit
    assert one(p * 1.5, request("WNC", rtol=0.5), p).hit  # rtol = parameter 0
    assert not one(p * 1.5, request("WNC", rtol=0.49), p).hit
    res = one(p, request("WNC", rtol=0.5), p)
    assert all(r.actual is None and not r.hit for r in res.params)


def test_not_changed_atol_is_parameter_1() -> None:
    p = np.array([0.0, 0.0])
    req = CheckRequest(
        CT.NOT_CHANGED,
        (Param("rtol", 0.0, False), Param("atol", 0.5, False), Param("equal_nan", 0.0, False)),
    )
    assert one([0.4, -0.5], req, p).hit
    assert not one([0.6, 0.0], req, p).hit


def test_not_changed_bound_is_inclusive() -> None:
    zero_tol = CheckRequest(
        CT.NOT_CHANGED,
        (Param("rtol", 0.0, False), Param("atol", 0.0, False), Param("equal_nan", 0.0, False)),
    )
    x = np.array([1.5, -2.25, 0.0], np.float32)
    assert one(x, zero_tol, x.copy()).hit
    assert not one(x, zero_tol, x + np.float32(2**-20)).hit
    negative_atol = CheckRequest(
        CT.NOT_CHANGED,
        (Param("rtol", 0.0, False), Param("atol", -1.0, False), Param("equal_nan", 0.0, False)),
    )
    assert not one(x, negative_atol, x.copy(), chunk_elements=2).hit
    assert one(x, zero_tol, x.copy(), chunk_elements=2).hit


def test_not_changed_with_nan_or_other_size_previous() -> None:
    req = request("WNC")
    assert not one([1.0, 2.0], req, [1.0, np.nan]).reported
    assert not one([1.0, 2.0], req, [1.0, 2.0, 3.0]).reported
    res = one([1.0, np.nan], req, [1.0, np.nan])
    assert res.error_code == 1 and not res.hit  # equal_nan is ignored by MindSpore
    # an Inf in the previous value only: |x - inf| <= rtol·inf holds in IEEE arithmetic
    assert one([1.0, 2.0], req, [1.0, np.inf]).hit


def test_previous_is_matched_in_c_order() -> None:
    x = np.arange(6.0).reshape(2, 3)
    prev = np.asfortranarray(x)  # same values, different memory order
    assert one(x, request("WNC"), prev).hit
    assert one(x.T, request("WNC"), x.T.copy()).hit
    assert not one(x.T.copy(), request("WNC"), x.reshape(3, 2)).hit


# ----------------------------------------------------------------------- legacy conditions
@pytest.mark.parametrize(
    ("cond", "threshold", "hit"),
    [
        (CT.MAX_GT, 3.9, True),
        (CT.MAX_GT, 4.0, False),
        (CT.MAX_LT, 4.1, True),
        (CT.MIN_GT, -3.1, True),
        (CT.MIN_LT, -3.0, False),
        (CT.MIN_LT, -2.9, True),
        (CT.MAX_MIN_GT, 6.9, True),
        (CT.MAX_MIN_LT, 7.0, False),
        (CT.MEAN_GT, 0.9, True),
        (CT.MEAN_LT, 1.0, False),
        (CT.SD_GT, 2.9, True),
        (CT.SD_LT, 2.9, False),
        (CT.SD_LT, 3.0, True),
    ],
)
def test_legacy_single_param_conditions(cond: int, threshold: float, hit: bool) -> None:
    x = np.array([-3.0, 1.0, 2.0, 4.0])  # sample sd = sqrt(26/3) ≈ 2.944
    res = one(x, legacy(cond, threshold))
    assert res.hit is hit and res.error_code == 0
    stats = {3: 4.0, 4: 4.0, 5: -3.0, 6: -3.0, 7: 7.0, 8: 7.0, 9: 1.0, 10: 1.0}
    expected = stats.get(int(cond), math.sqrt(26 / 3))
    assert res.params[0].actual == pytest.approx(expected, rel=1e-15)


def test_legacy_direction_comes_from_the_condition() -> None:
    # MindSpore takes gt/lt from a legacy condition type even when the name says otherwise
    req = CheckRequest(CT.MAX_LT, (Param("max_gt", 10.0, False),))
    assert one([1.0, 2.0], req).hit


def test_sd_of_a_single_element_is_zero() -> None:
    assert one([5.0], legacy(CT.SD_LT, 1e-300)).params[0].actual == 0.0


# -------------------------------------------------------------------- reporting & inputs
def test_empty_tensor_is_skipped() -> None:
    for abbr in ("TO", "TL", "WNC", "TZ"):
        req = (
            request(abbr)
            if abbr in ("TO", "WNC")
            else request(abbr, **{get_condition(abbr).params[0].name: 0.0})
        )
        res = one(np.zeros((0, 3), np.float32), req, np.zeros(0))
        assert not res.reported
        assert all(p.actual is None for p in res.params)


def test_unsupported_dtype_gives_no_result() -> None:
    # (complex tensors are checked: tests/core/test_hostile_dtypes.py)
    res = one(np.array(["1", "nan"]), request("TO"))
    assert not res.reported
    assert not C.supported_dtype(np.dtype(np.complex64))
    assert not C.supported_dtype(np.dtype("U3"))
    assert C.supported_dtype(BF16) and C.supported_dtype(np.dtype(np.bool_))


def test_reported_property() -> None:
    assert CheckResult(True, 0).reported
    assert CheckResult(False, 4).reported
    assert not CheckResult(False, 0).reported


def test_disabled_params_and_parameter_order_kept() -> None:
    req = request("TL", max_gt=0.0)
    res = one([1.0], req)
    assert [p.name for p in res.params] == list(get_condition("TL").param_names)
    assert [p.disabled for p in res.params] == [True, False, True, True]


def test_short_parameter_lists_read_as_disabled() -> None:
    # MindSpore indexes TOO_LARGE's 4th parameter; a 1-parameter list must not break us
    req = CheckRequest(CT.TOO_LARGE, (Param("abs_mean_gt", 0.5, False),))
    assert one([1.0, -1.0], req).hit


def test_several_requests_share_one_pass() -> None:
    x = np.array([0.0, 0.0, 3.0, -1.0])
    reqs = [
        request("TZ", zero_percentage_ge=50.0),
        request("TL", abs_mean_gt=0.5, mean_gt=0.4),
        request("TR", range_start_inclusive=0, range_end_inclusive=0, range_percentage_gt=49),
        request("TR", range_start_inclusive=-1, range_end_inclusive=3, range_percentage_lt=100),
        request("WNC"),
        request("TO"),
    ]
    res = evaluate(x, reqs, x.copy())
    assert [r.hit for r in res] == [True, True, True, False, True, False]
    assert actual(res[1], "mean_gt") == 0.5 and actual(res[1], "abs_mean_gt") == 1.0


# --------------------------------------------------------------------------------- dtypes
def test_bool_tensor() -> None:
    x = np.array([True, False, False, True, False])
    assert actual(one(x, request("TZ", zero_percentage_ge=0)), "zero_percentage_ge") == 60.0
    res = one(x, request("TL", max_gt=0.5, min_gt=-1.0, abs_mean_gt=0.0, mean_gt=0.0))
    assert actual(res, "max_gt") == 1.0 and actual(res, "min_gt") == 0.0
    assert actual(res, "mean_gt") == pytest.approx(0.4)
    res = one(
        x, request("TR", range_start_inclusive=0.5, range_end_inclusive=2, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 40.0
    prev = np.array([True, True, False, True, False])
    res = one(x, request("WCL", abs_mean_update_ratio_gt=0.0), prev)
    assert actual(res, "abs_mean_update_ratio_gt") == pytest.approx(1 / 3, rel=1e-8)


def test_int8_and_uint64() -> None:
    x = np.array([-128, 0, 127], np.int8)
    res = one(x, request("TL", max_gt=0, min_gt=-200, mean_gt=-1, abs_mean_gt=0))
    assert actual(res, "max_gt") == 127.0 and actual(res, "min_gt") == -128.0
    assert actual(res, "mean_gt") == pytest.approx(-1 / 3)
    assert actual(res, "abs_mean_gt") == 85.0
    big = np.array([2**64 - 1, 0, 2**63], np.uint64)
    res = one(big, request("TL", max_gt=0, abs_mean_gt=0))
    assert actual(res, "max_gt") == float(2**64 - 1)
    assert actual(res, "abs_mean_gt") == pytest.approx((2.0**64 + 2.0**63) / 3)
    # float64 conversion first: 2**53 + 1 reads as 2**53, which is inside [2**53, 2**53]
    i64 = np.array([2**53 + 1, 2**53], np.int64)
    res = one(
        i64,
        request(
            "TR",
            range_start_inclusive=2.0**53,
            range_end_inclusive=2.0**53,
            range_percentage_gt=0,
        ),
    )
    assert actual(res, "range_percentage_gt") == 100.0


def test_float16_with_infinity_and_values() -> None:
    x = np.array([1.0, 65504.0, -2.0], np.float16)
    res = one(x, request("TL", max_gt=0, abs_mean_gt=0))
    assert actual(res, "max_gt") == 65504.0
    assert actual(res, "abs_mean_gt") == pytest.approx((1 + 65504 + 2) / 3)
    assert one(np.array([1.0, np.inf], np.float16), request("TL", max_gt=0)).error_code == 2
    assert one(np.array([np.nan], np.float16), request("TO")).hit


def test_bfloat16() -> None:
    x = np.array([1.5, -0.0, 3.0, np.nan], BF16)
    assert one(x, request("TL", max_gt=0)).error_code == 1
    assert one(x, request("TO")).hit
    x = np.array([1.5, -0.0, 3.0, 0.0], BF16)
    res = one(x, request("TZ", zero_percentage_ge=50))
    assert res.hit and actual(res, "zero_percentage_ge") == 50.0
    res = one(x, request("TL", max_gt=0, mean_gt=0))
    assert actual(res, "max_gt") == 3.0 and actual(res, "mean_gt") == 1.125
    res = one(x, request("WNC"), x.astype(np.float32))
    assert res.hit


def test_big_endian_and_strided_inputs() -> None:
    x = np.array([0.0, 1.5, -2.0, 0.1], dtype=">f4")
    res = one(x, request("TL", max_gt=0, mean_gt=0, abs_mean_gt=0), chunk_elements=3)
    assert actual(res, "max_gt") == 1.5
    assert actual(res, "mean_gt") == pytest.approx((float(np.float32(0.1)) - 0.5) / 4, rel=1e-12)
    res = one(
        x, request("TR", range_start_inclusive=0.0, range_end_inclusive=0.1, range_percentage_gt=0)
    )
    assert actual(res, "range_percentage_gt") == 25.0  # float32(0.1) > 0.1
    grid = np.arange(20.0).reshape(4, 5)[:, ::2]  # not contiguous
    res = one(grid, request("TZ", zero_percentage_ge=0), chunk_elements=4)
    assert actual(res, "zero_percentage_ge") == pytest.approx(100 / 12)
    flags = np.array([[True, True], [False, True]])
    assert one(flags.T, request("WNC"), flags.T.copy()).hit
    assert not one(flags.T, request("WNC"), flags).hit


def test_moments_are_numerically_sound_across_chunks() -> None:
    rng = np.random.default_rng(1)
    x = 1e8 + rng.standard_normal(10_000)  # large mean, unit variance
    res = one(x, legacy(CT.SD_GT, 0.0), chunk_elements=997)
    assert res.params[0].actual == pytest.approx(np.std(x, ddof=1), rel=1e-9)
    res = one(x, legacy(CT.MEAN_GT, 0.0), chunk_elements=997)
    assert res.params[0].actual == pytest.approx(np.mean(x), rel=1e-15)
    const = np.full(1000, 0.1)
    assert one(const, legacy(CT.SD_LT, 1e-300), chunk_elements=7).params[0].actual < 1e-15


def test_memmap_input(tmp_path: Path) -> None:
    path = tmp_path / "t.npy"
    data = np.linspace(-1, 1, 1001, dtype=np.float32)
    np.save(path, data)
    mm = np.load(path, mmap_mode="r")
    res = one(mm, request("TL", abs_mean_gt=0.0), chunk_elements=100)
    assert actual(res, "abs_mean_gt") == pytest.approx(np.abs(data.astype(np.float64)).mean())


def test_errors_found_in_any_chunk() -> None:
    x = np.zeros(1000, np.float32)
    x[999] = np.nan
    x[3] = np.inf
    res = one(x, request("TL", max_gt=0), chunk_elements=10)
    assert res.error_code == 3


def test_chunk_size_does_not_change_results() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1001).astype(np.float32)
    p = x + rng.standard_normal(1001).astype(np.float32) * 0.01
    reqs = [
        request("TL", abs_mean_gt=0, max_gt=0, min_gt=0, mean_gt=0),
        request("TR", range_start_inclusive=-0.5, range_end_inclusive=0.5, range_percentage_lt=0),
        request("WCL", abs_mean_update_ratio_gt=0),
        request("TZ", zero_percentage_ge=0),
    ]
    base = evaluate(x, reqs, p)
    for chunk in (1, 2, 3, 64, 1000, 1001, 5000):
        other = evaluate(x, reqs, p, chunk_elements=chunk)
        for a, b in zip(base, other, strict=True):
            assert a.hit == b.hit and a.error_code == b.error_code
            for pa, pb in zip(a.params, b.params, strict=True):
                assert pa.actual == pytest.approx(pb.actual, rel=1e-12, abs=1e-300)


def _every_threshold() -> list[CheckRequest]:
    """Every condition with every threshold enabled, two different ranges (the benchmark's
    set), plus a legacy SD request for the moments."""
    reqs = [
        request("TL", abs_mean_gt=1e30, max_gt=1e30, min_gt=1e30, mean_gt=1e30),
        request("TS", abs_mean_lt=0, max_lt=-1e30, min_lt=-1e30, mean_lt=-1e30),
        request("TZ", zero_percentage_ge=100),
        request("WI", zero_percentage_ge=100, max_gt=1e30, min_lt=-1e30),
        request("TO"),
        request("WNC", rtol=1e-5),
        request("WCL", abs_mean_update_ratio_gt=1e9),
        request("WCS", abs_mean_update_ratio_lt=0),
        request("TR", range_start_inclusive=-1e6, range_end_inclusive=1e6, range_percentage_lt=0),
        request("AR", range_start_inclusive=-1, range_end_inclusive=0, range_percentage_gt=100),
        legacy(CT.SD_GT, 0.0),
    ]
    return reqs


KERNELS = ["numba", "c"]


@contextlib.contextmanager
def kernel_in_use(kind: str) -> Iterator[None]:
    """Make `kind` ("numba" or "c") the process's kernel for the block: both are checked
    against the numpy engine (the C one is built into the user cache if need be)."""
    if kind == "c" and c_kernel.compiler() is None:
        pytest.skip("no C compiler on this machine: the C kernel cannot be built")
    saved = os.environ.get("TUIDEBUG_KERNEL")
    os.environ["TUIDEBUG_KERNEL"] = kind
    kernels.forget()
    try:
        assert kernels.load() is not None, f"the {kind} kernel must load"
        assert kernels.kind() == kind
        yield
    finally:
        if saved is None:
            os.environ.pop("TUIDEBUG_KERNEL", None)
        else:
            os.environ["TUIDEBUG_KERNEL"] = saved
        kernels.forget()


@pytest.fixture(params=["numpy", *KERNELS])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test on the numpy engine and on each compiled kernel (any tensor size)."""
    kind = str(request.param)
    monkeypatch.setattr(C, "KERNEL_MIN_ELEMENTS", 1 << 62 if kind == "numpy" else 0)
    if kind == "numpy":
        yield kind
        return
    with kernel_in_use(kind):
        yield kind


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("prev_mode", ["none", "changed", "partly_unchanged", "other_dtype"])
def test_threads_do_not_change_results(
    monkeypatch: pytest.MonkeyPatch, engine: str, dtype: str, prev_mode: str
) -> None:
    # tiny units so that a few thousand elements take the threaded path
    monkeypatch.setattr(C, "PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(C, "PARALLEL_UNIT", 256)
    rng = np.random.default_rng(3)
    raw = rng.standard_normal(5003) * 3
    raw[rng.integers(0, raw.size, 40)] = 0.0
    raw[:700] = np.abs(raw[:700])  # one-signed sub-blocks take the Σ|x| = Σx shortcut
    x = (raw > 0) if dtype == "bool" else raw.astype(dtype)
    prev: np.ndarray | None = None
    if prev_mode == "changed":
        prev = (raw + 0.25).astype(x.dtype) if dtype != "bool" else ~x
    elif prev_mode == "partly_unchanged":
        prev = x.copy()
        prev[3000:] = (raw[3000:] - 1).astype(x.dtype) if dtype != "bool" else ~x[3000:]
    elif prev_mode == "other_dtype":
        prev = raw.astype(np.float64) * 0.5
    reqs = _every_threshold()
    one_thread = evaluate(x, reqs, prev, threads=1, chunk_elements=64)
    two_threads = evaluate(x, reqs, prev, threads=2, chunk_elements=64)
    assert one_thread == two_threads
    # and the block size only moves sums by rounding
    default = evaluate(x, reqs, prev, threads=1)
    for a, b in zip(default, one_thread, strict=True):
        assert (a.hit, a.error_code) == (b.hit, b.error_code)
        for pa, pb in zip(a.params, b.params, strict=True):
            assert pa.actual == pytest.approx(pb.actual, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("bad", ["nan_then_inf", "inf_only", "nan_late"])
def test_threads_find_every_error_bit(
    monkeypatch: pytest.MonkeyPatch, engine: str, bad: str
) -> None:
    monkeypatch.setattr(C, "PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(C, "PARALLEL_UNIT", 256)
    x = np.random.default_rng(4).standard_normal(6000).astype(np.float32)
    if bad == "nan_then_inf":
        x[10], x[5990] = np.nan, -np.inf
    elif bad == "inf_only":
        x[3000] = np.inf
    else:
        x[5999] = np.nan
    reqs = [
        *_every_threshold(),
        request("TO"),
        CheckRequest(CT.HAS_NAN, (Param("max_gt", 0, False),)),
    ]
    one_thread = evaluate(x, reqs, x + 1, threads=1, chunk_elements=64)
    two_threads = evaluate(x, reqs, x + 1, threads=2, chunk_elements=64)
    assert one_thread == two_threads
    expected = {"nan_then_inf": 3, "inf_only": 2, "nan_late": 1}[bad]
    assert one_thread[0].error_code == expected


def test_plans_are_cached_per_request_list() -> None:
    reqs = _every_threshold()
    assert C._plan(reqs, True) is C._plan(list(reqs), True)
    assert C._plan(reqs, True) is not C._plan(reqs, False)
    # equal requests that are other objects plan the same
    assert C._plan([request("TZ", zero_percentage_ge=1)], False) == C._plan(
        [request("TZ", zero_percentage_ge=1)], False
    )


# ------------------------------------------------------------- property test vs reference
_LOWEST = -np.finfo(np.float64).max


def _exact_mean(x: np.ndarray) -> float:
    """The mean without cancellation (np.mean loses int64 values near ±2**63 that cancel)."""
    values = x.astype(np.float64).ravel()
    if not np.isfinite(values).all():
        return float(np.mean(values))
    return math.fsum(values) / values.size


def _ref_stat(stat: str, x: np.ndarray, req: CheckRequest, prev: np.ndarray | None) -> float:
    """One statistic straight from its definition in spec §3.5."""
    n = x.size
    finite = x[~np.isnan(x)]
    if stat == "max":
        return float(finite.max()) if finite.size else _LOWEST
    if stat == "min":
        return float(finite.min()) if finite.size else -_LOWEST
    if stat == "max_min":
        return _ref_stat("max", x, req, prev) - _ref_stat("min", x, req, prev)
    if stat == "mean":
        return _exact_mean(x)
    if stat == "sd":
        return float(np.std(x, ddof=1)) if n > 1 else 0.0
    if stat == "abs_mean":
        return _exact_mean(np.abs(x))
    if stat == "zero_percentage":
        return 100.0 * np.count_nonzero(x == 0.0) / n
    if stat == "range_percentage" and req.condition == CT.RANGE:
        ps = req.params
        lo = ps[0].value if len(ps) > 0 and not ps[0].disabled else -np.inf
        hi = ps[1].value if len(ps) > 1 and not ps[1].disabled else np.inf
        if len(ps) < 2 or (ps[0].disabled and ps[1].disabled):
            return math.nan
        return 100.0 * np.count_nonzero((x >= lo) & (x <= hi)) / n
    if stat == "abs_mean_update_ratio" and prev is not None:
        if prev.size != n:
            return math.nan
        with np.errstate(invalid="ignore"):
            return float(np.mean(np.abs(x - prev)) / (np.mean(np.abs(prev)) + 1e-9))
    return math.nan


_LEGACY = {3: "max", 4: "max", 5: "min", 6: "min", 7: "max_min", 8: "max_min",
           9: "mean", 10: "mean", 11: "sd", 12: "sd"}  # fmt: skip


def reference(
    x_raw: np.ndarray, req: CheckRequest, prev_raw: np.ndarray | None
) -> tuple[bool, int, list[float | None], list[bool]]:
    """A plain one-condition-at-a-time implementation of spec §3.5."""
    x = np.asarray(x_raw).astype(np.float64).ravel()
    prev = None if prev_raw is None else np.asarray(prev_raw).astype(np.float64).ravel()
    if x.size == 0 or req.condition == CT.IS_OVERFLOW:
        return False, 0, [None] * len(req.params), [False] * len(req.params)
    nan, inf = bool(np.isnan(x).any()), bool(np.isinf(x).any())
    err = (1 if nan else 0) | (2 if inf else 0)
    hit = False
    c = req.condition
    if c == 0:
        err, hit = 0, nan
    elif c == 1:
        err, hit = 0, inf
    elif c == 13:
        err, hit = 0, nan or inf
    elif c == 20 and prev is not None and not err:
        if prev.size == x.size:
            ps = req.params
            rtol = ps[0].value if not ps[0].disabled else 1e-5
            atol = ps[1].value if not ps[1].disabled else 1e-8
            with np.errstate(invalid="ignore"):
                hit = bool(np.all(np.abs(x - prev) <= atol + rtol * np.abs(prev)))
    elif c in (18, 19, 20) and prev is None:
        err |= 4
    actuals: list[float | None] = [None] * len(req.params)
    hits = [False] * len(req.params)
    if err:
        return hit, err, actuals, hits
    for i, p in enumerate(req.params):
        if p.disabled:
            continue
        stat = _LEGACY.get(c, "") if p.name == "param" else p.name.rsplit("_", 1)[0]
        if "_" not in p.name and p.name != "param":
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            value = _ref_stat(stat, x, req, prev)
        if math.isnan(value):
            continue
        op = "gt" if c in (3, 5, 7, 9, 11) else "lt" if c in (4, 6, 8, 10, 12) else p.name[-2:]
        actuals[i] = value
        hits[i] = {"gt": value > p.value, "lt": value < p.value,
                   "ge": value >= p.value, "le": value <= p.value}.get(op, False)  # fmt: skip
        hit = hit or hits[i]
    return hit, err, actuals, hits


_EXACT_STATS = {"max", "min", "zero_percentage", "range_percentage", "max_min"}
_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_]


@st.composite
def tensors(draw: st.DrawFn) -> np.ndarray:
    kind = draw(st.sampled_from([*_DTYPES, "bfloat16"]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=40))
    if kind == "bfloat16":
        base = draw(hnp.arrays(np.float32, shape, elements=_float_elements()))
        return base.astype(BF16)
    dtype = np.dtype(kind)
    if dtype.kind == "f":
        return draw(hnp.arrays(dtype, shape, elements=_float_elements(dtype.itemsize * 8)))
    info = np.iinfo(dtype) if dtype != np.bool_ else None
    if info is None:
        return draw(hnp.arrays(dtype, shape))
    small = st.integers(-3, 3) if info.min < 0 else st.integers(0, 3)
    edge = st.sampled_from([int(info.min), int(info.max)])
    return draw(hnp.arrays(dtype, shape, elements=st.one_of(small, small, edge)))


def _float_elements(width: int = 32) -> st.SearchStrategy[float]:
    special = st.sampled_from([-0.0, np.nan, np.inf, -np.inf])
    normal = st.floats(-1e4, 1e4, width=width)  # type: ignore[arg-type]
    on_threshold = st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 50.0])
    # mostly finite so that parameters get evaluated, often exactly on a threshold
    return st.one_of(normal, on_threshold, on_threshold, special)


_THRESHOLDS = st.sampled_from([-1e3, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 50.0, 99.0, 100.0, 1e3])


@st.composite
def requests(draw: st.DrawFn) -> CheckRequest:
    cond = draw(st.sampled_from([c.proto for c in CONDITIONS.values()] + list(range(0, 13))))
    if 3 <= cond <= 12:
        return legacy(cond, draw(_THRESHOLDS))
    spec = next((c for c in CONDITIONS.values() if c.proto == cond), None)
    if spec is None:
        return CheckRequest(cond)
    params = []
    for p in spec.params:
        enabled = not p.support_disable or draw(st.booleans())
        value = draw(_THRESHOLDS) if p.name != "equal_nan" else 0.0
        if p.name in ("rtol", "atol"):
            value = abs(value) / 100
        params.append(Param(p.name, value if enabled else 0.0, not enabled))
    return CheckRequest(cond, tuple(params))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=tensors(),
    reqs=st.lists(requests(), min_size=1, max_size=4),
    prev_mode=st.sampled_from(["none", "same", "perturbed", "other_size", "nan"]),
    chunk=st.integers(1, 17),
    kernel=st.sampled_from(["numpy", *KERNELS]),
)
def test_engine_matches_reference(
    x: np.ndarray, reqs: list[CheckRequest], prev_mode: str, chunk: int, kernel: str
) -> None:
    prev: np.ndarray | None
    if prev_mode == "none":
        prev = None
    elif prev_mode == "same":
        prev = x.copy()
    elif prev_mode == "perturbed":
        prev = (x.astype(np.float64) * 1.01 + 0.001).astype(np.float32)
    elif prev_mode == "other_size":
        prev = np.ones(x.size + 1, np.float32)
    else:
        prev = np.full(x.shape, np.nan)
    saved = C.KERNEL_MIN_ELEMENTS
    C.KERNEL_MIN_ELEMENTS = 1 << 62 if kernel == "numpy" else 0  # numpy or that kernel
    try:
        with contextlib.nullcontext() if kernel == "numpy" else kernel_in_use(kernel):
            got = evaluate(x, reqs, prev, chunk_elements=chunk)
    finally:
        C.KERNEL_MIN_ELEMENTS = saved
    # float64 sums are exact only to rounding relative to the data's magnitude, so a sum
    # statistic's hit is checked only when it is clear of the threshold by more than that
    magnitude = np.abs(x.astype(np.float64))
    scale = 1.0 + float(np.max(magnitude, initial=0.0, where=~np.isnan(magnitude)))

    def clear(value: float, threshold: float, exact: bool) -> bool:
        margin = 1e-9 * max(1.0, abs(value))
        return abs(value - threshold) > (margin if exact else max(margin, 1e-12 * scale))

    for req, res in zip(reqs, got, strict=True):
        hit, err, actuals, hits = reference(x, req, prev)
        assert res.error_code == err
        for p, r, want, want_hit in zip(req.params, res.params, actuals, hits, strict=True):
            stat = "x" if p.name == "param" else p.name.rsplit("_", 1)[0]
            if want is None:
                assert r.actual is None, (p, r)
                assert not r.hit
                continue
            assert r.actual is not None, (p, r, want)
            if stat in _EXACT_STATS:
                assert r.actual == want, (p, r, want)
                assert r.hit == want_hit
            else:
                assert r.actual == pytest.approx(want, rel=1e-9, abs=1e-12 * scale), (p, r, want)
                if clear(want, p.value, exact=False):
                    assert r.hit == want_hit, (p, r, want)
        if all(
            a is None or clear(a, p.value, exact=p.name.rsplit("_", 1)[0] in _EXACT_STATS)
            for p, a in zip(req.params, actuals, strict=True)
        ):
            assert res.hit == hit


# ------------------------------------------------------------ against MindInsight's answers
def _dump_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "mindspore_lenet_dump" / "ms2_0_0" / "rank_0" / "LeNet" / "0"


def _reference(fixtures_dir: Path) -> dict:
    path = fixtures_dir / "expected" / "lenet_ms2_0_0.mindinsight.json"
    return json.loads(path.read_text())


def _outputs(folder: Path) -> dict[tuple[str, int], Path]:
    """(node short name, slot) → file for the output tensors of one iteration (2.0 names)."""
    found = {}
    for path in folder.glob("*.output.*.npy"):
        parts = path.name.split(".")
        name, slot = ".".join(parts[1:-7]), int(parts[-3])
        found[(name, slot)] = path
    return found


def test_tensor_too_large_matches_mindinsight(fixtures_dir: Path) -> None:
    ref = _reference(fixtures_dir)
    w4 = ref["watchpoints"][3]
    assert w4["params"] == {"abs_mean_gt": 1.0}
    hit = next(h for h in w4["hits"] if h["iteration"] == 0)
    short = hit["node"].rsplit("/", 1)[-1]
    (path,) = _dump_dir(fixtures_dir).glob(f"0/*.{short}.*.output.{hit['slot']}.*.npy")
    res = one(np.load(path), request("TL", abs_mean_gt=1.0))
    assert res.hit and res.error_code == 0
    assert actual(res, "abs_mean_gt") == pytest.approx(hit["actual"][0]["actual"], rel=1e-9)


def test_value_watchpoints_match_mindinsight_on_every_output(fixtures_dir: Path) -> None:
    """W1–W7 of the reference, checked on every dumped output tensor of the 4 iterations."""
    ref = _reference(fixtures_dir)
    root = _dump_dir(fixtures_dir)
    classes = {
        "TensorOverflow": "TO",
        "TensorTooLarge": "TL",
        "TensorTooSmall": "TS",
        "TensorAllZero": "TZ",
        "TensorRange": "TR",
    }
    watchpoints = ref["watchpoints"][:7]
    reqs = [request(classes[w["condition"]], **w["params"]) for w in watchpoints]
    found: list[set[tuple[str, int, int]]] = [set() for _ in watchpoints]
    actuals: dict[tuple[int, str, int, int], float | None] = {}
    for it in range(4):
        for (name, slot), path in _outputs(root / str(it)).items():
            for i, res in enumerate(evaluate(np.load(path), reqs)):
                if res.reported:
                    found[i].add((name, slot, it))
                    actuals[(i, name, slot, it)] = res.params[0].actual if res.params else None
    for i, w in enumerate(watchpoints):
        expected = {(h["node"].rsplit("/", 1)[-1], h["slot"], h["iteration"]) for h in w["hits"]}
        assert found[i] == expected, w["condition"]
        for h in w["hits"]:
            key = (i, h["node"].rsplit("/", 1)[-1], h["slot"], h["iteration"])
            assert actuals[key] == pytest.approx(h["actual"][0]["actual"], rel=1e-9)


@pytest.mark.parametrize("index", [7, 8, 9])
def test_change_watchpoints_match_mindinsight(fixtures_dir: Path, index: int) -> None:
    """W8–W10 on the 8 weights over iterations 0–3: same hits, errors and ratios."""
    ref = _reference(fixtures_dir)
    w = ref["watchpoints"][index]
    abbr = {
        "TensorChangeAboveThreshold": "WCL",
        "TensorChangeBelowThreshold": "WCS",
        "TensorUnchanged": "WNC",
    }[w["condition"]]
    req = request(abbr, **w["params"])
    root = _dump_dir(fixtures_dir)

    def load(weight: str, it: int) -> np.ndarray | None:
        paths = list(root.glob(f"{it}/Parameter.{weight}.*.output.0.*.npy"))
        return np.load(paths[0]) if paths else None

    got = {}
    for weight in ref["weight_nodes"]:
        for it in range(4):
            value = load(weight, it)
            assert value is not None
            prev = load(weight, it - 1) if it > 0 else None
            res = one(value, req, prev)
            if res.reported:
                got[(weight, it)] = res
    expected = {(h["node"], h["iteration"]): h for h in w["hits"]}
    assert set(got) == set(expected)
    for key, h in expected.items():
        res = got[key]
        assert res.error_code == h["error_code"]
        if h["error_code"] == 0:
            for p in h["actual"]:
                if p["hit"]:
                    assert actual(res, p["name"]) == pytest.approx(p["actual"], rel=1e-9)
                    assert phit(res, p["name"])


@pytest.mark.parametrize("kind", KERNELS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "uint8"])
def test_compiled_kernel_matches_numpy_engine(
    monkeypatch: pytest.MonkeyPatch, dtype: str, kind: str
) -> None:
    """Large tensors take the compiled kernel; its results equal the numpy engine's (sums
    to rounding), with several threads, unchanged stretches and a previous tensor."""
    with kernel_in_use(kind):
        _compiled_matches_numpy(monkeypatch, dtype)


def _compiled_matches_numpy(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    rng = np.random.default_rng(11)
    n = C.KERNEL_MIN_ELEMENTS + 12_345
    raw = rng.standard_normal(n) * 2
    raw[rng.integers(0, n, 500)] = 0.0
    x = raw.astype(BF16 if dtype == "bfloat16" else dtype)
    prev = x.copy()
    prev[n // 2 :] = (raw[n // 2 :] * 1.5).astype(x.dtype)
    reqs = _every_threshold()
    monkeypatch.setattr(C, "PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(C, "PARALLEL_UNIT", 1 << 16)
    for p in (None, prev, x.copy()):
        compiled = evaluate(x, reqs, p, threads=2)
        assert C._Scan(x, p, C._plan(reqs, p is not None), C.CHUNK_ELEMENTS).kernel is not None
        with monkeypatch.context() as m:
            m.setattr(C, "KERNEL_MIN_ELEMENTS", 1 << 62)
            plain = evaluate(x, reqs, p, threads=1)
        for a, b in zip(compiled, plain, strict=True):
            assert (a.hit, a.error_code) == (b.hit, b.error_code)
            for pa, pb in zip(a.params, b.params, strict=True):
                assert pa.actual == pytest.approx(pb.actual, rel=1e-12, abs=1e-300)


def test_kernel_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.ones(C.KERNEL_MIN_ELEMENTS, np.float32)
    plan = C._plan([request("TL", mean_gt=0)], False)
    C.prepare_kernel(C.KERNEL_WAIT_BYTES)
    monkeypatch.setenv("TUIDEBUG_KERNEL", "numpy")
    C.prepare_kernel(C.KERNEL_WAIT_BYTES)
    assert C._Scan(x, None, plan, C.CHUNK_ELEMENTS).kernel is None
    assert one(x, request("TL", mean_gt=0)).hit
    monkeypatch.delenv("TUIDEBUG_KERNEL")
    assert C._Scan(x, None, plan, C.CHUNK_ELEMENTS).kernel is not None
    assert C._Scan(x[:-1], None, plan, C.CHUNK_ELEMENTS).kernel is None  # below the size


def test_the_kernel_loads_only_for_enough_float64_work() -> None:
    """Loading numba costs ~0.3 s: a check reading only NaN/Inf or a little data never pays
    it; one with `KERNEL_WAIT_BYTES` of sums to compute loads it before it starts. (In a
    fresh process: this one may have loaded it already.)"""
    code = (
        "import sys\n"
        "from tuidebug.core import scan_engine as c\n"
        "from tuidebug.core.condition_catalogue import CheckRequest, ConditionType\n"
        "to = [CheckRequest(int(ConditionType.GENERAL_OVERFLOW))]\n"
        "assert not c.needs_float64_stage(to, False)\n"
        "c.prepare_kernel(c.KERNEL_PRELOAD_BYTES - 1)\n"
        "print('numba' in sys.modules)\n"
        "c.prepare_kernel(c.KERNEL_WAIT_BYTES)\n"
        "import numpy as np\n"
        "from tuidebug.core import kernels\n"
        "print(kernels.ready(np.dtype(np.float32)) is not None)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("kind", KERNELS)
def test_compiled_kernel_errors_and_extrema_past_nan(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(C, "KERNEL_MIN_ELEMENTS", 0)
    with kernel_in_use(kind):
        _errors_and_extrema_past_nan()


def _errors_and_extrema_past_nan() -> None:
    x = np.arange(-50_000, 50_000, dtype=np.float32)
    x[70_000] = np.nan
    # HAS_NAN with a parameter reads the statistics past the NaN: max over non-NaN values
    res = one(x, CheckRequest(CT.HAS_NAN, (Param("max_gt", 0, False),)))
    assert res.hit and res.error_code == 0 and res.params[0].actual == 49_999.0
    x[99_999] = -np.inf
    assert one(x, request("TL", max_gt=0)).error_code == 3
    x[:] = np.nan
    res = one(x, CheckRequest(CT.HAS_NAN, (Param("min_lt", 0, False),)))
    assert res.hit and res.params[0].actual == np.finfo(np.float64).max  # MindSpore's start


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16", "int32", "bool"])
@pytest.mark.parametrize("poison", ["none", "nan", "inf", "-inf", "nan+inf"])
def test_small_tensor_nan_inf_shortcut_matches_the_scan(
    monkeypatch: pytest.MonkeyPatch, dtype: str, poison: str
) -> None:
    """Small tensors whose requests read only NaN/Inf skip the scan; the answers (hit, error
    bits, for every condition that reads nothing else) are the scan's."""
    x = np.linspace(-2, 2, 37).astype(np.float64)
    if poison != "none" and dtype not in ("int32", "bool"):
        for i, value in enumerate(poison.split("+")):
            x[5 + 7 * i] = float(value)
    t = x.astype(BF16 if dtype == "bfloat16" else dtype)
    reqs = [
        CheckRequest(int(CT.HAS_NAN)),
        CheckRequest(int(CT.HAS_INF)),
        CheckRequest(int(CT.GENERAL_OVERFLOW)),
    ]
    fast = evaluate(t.reshape(37, 1), reqs)
    monkeypatch.setattr(C, "SMALL_ELEMENTS", -1)  # every tensor takes the scan
    assert evaluate(t.reshape(37, 1), reqs) == fast
    if poison != "none" and dtype not in ("int32", "bool"):
        assert fast[2].hit


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(
    "poison", [(), ("nan",), ("inf",), ("-inf",), ("nan", "-inf"), ("inf", "nan")]
)
def test_nan_inf_units_match_the_threaded_scan(dtype: str, poison: tuple[str, ...]) -> None:
    """A big tensor whose requests read only NaN/Inf takes two flat reductions per unit;
    its answers are the full scan's (which the threaded path still runs)."""
    n = C.PARALLEL_MIN_ELEMENTS + 5
    x = np.zeros(n, np.float32)
    for i, value in enumerate(poison):  # in different units, the last one partial
        x[[7, n - 2][i]] = float(value)
    t = x.astype(BF16 if dtype == "bfloat16" else dtype)
    reqs = [
        CheckRequest(int(CT.HAS_NAN)),
        CheckRequest(int(CT.HAS_INF)),
        CheckRequest(int(CT.GENERAL_OVERFLOW)),
    ]
    assert evaluate(t, reqs, threads=1) == evaluate(t, reqs, threads=2)
