"""Watchpoints: validation, the CLI spec form, wire parameters, hits, targets and the
recommended set (spec §2.7, §3, §4, §6.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.core.small_graph import (
    CONST,
    CONV,
    CONV_GRAD,
    OP,
    PARAM,
    RELU,
    RELU_GRAD,
    TANH,
    op,
    small_graph,
)
from tuidebug.core.condition_catalogue import (
    CONDITIONS,
    CheckResult,
    ParamResult,
    UnknownConditionError,
    get_condition,
)
from tuidebug.core.error_codes import ERROR_MESSAGES, ErrorCode, error_messages
from tuidebug.core.graph import Graph, Node
from tuidebug.core.tensor import TensorRef
from tuidebug.core.watchpoints import (
    Watchpoint,
    WatchpointError,
    WatchpointHit,
    check_watchpoints,
    format_value,
    parse_watch_spec,
    recommended_watchpoints,
    resolve_targets,
    validate_params,
)


# ------------------------------------------------------------------------------ validation
def test_validate_returns_floats_in_declared_order() -> None:
    got = validate_params("TL", {"mean_gt": 1, "abs_mean_gt": np.float32(0.5)})
    assert list(got) == ["abs_mean_gt", "mean_gt"]
    assert got == {"abs_mean_gt": 0.5, "mean_gt": 1.0}
    assert all(type(v) is float for v in got.values())
    assert validate_params("TO", {}) == {}
    assert validate_params("WNC", {}) == {}  # rtol has a default inside MindSpore
    assert validate_params("WNC", {"rtol": 1e-3, "atol": 1e-6}) == {"rtol": 1e-3, "atol": 1e-6}
    assert validate_params("WCL", {"abs_mean_update_ratio_gt": 1, "epsilon": 1e-9})


@pytest.mark.parametrize(
    ("condition", "params", "fragment"),
    [
        ("TL", {"bogus": 1.0}, "valid parameters: abs_mean_gt, max_gt, min_gt, mean_gt"),
        ("TO", {"max_gt": 1.0}, "takes no parameters"),
        ("TL", {}, "at least one threshold"),
        ("WCL", {}, "at least one threshold"),
        ("TZ", {}, "at least one threshold"),
        ("TR", {"range_start_inclusive": 0.0, "range_end_inclusive": 1.0}, "at least one"),
        ("TL", {"abs_mean_gt": True}, "must be a number"),
        ("TL", {"abs_mean_gt": "1"}, "must be a number"),
        ("TL", {"abs_mean_gt": -1.0}, "0 <= value < inf"),
        ("TL", {"max_gt": math.inf}, "-inf < value < inf"),
        ("TL", {"max_gt": math.nan}, "max_gt"),
        ("TZ", {"zero_percentage_ge": 101}, "0 <= value <= 100"),
        ("TR", {"max_min_lt": 0.0}, "0 < value < inf"),
        ("TR", {"range_percentage_lt": 5, "range_start_inclusive": 0}, "range_end_inclusive"),
        (
            "AR",
            {"range_percentage_gt": 5, "range_start_inclusive": 2, "range_end_inclusive": 1},
            "must not exceed",
        ),
        ("WNC", {"equal_nan": 0.5}, "true or false"),
        ("TL", {"max_gt": 10**400}, "max_gt"),
    ],
)
def test_validate_errors_are_one_sentence(
    condition: str, params: dict[str, object], fragment: str
) -> None:
    with pytest.raises(WatchpointError) as err:
        validate_params(condition, params)
    text = str(err.value)
    assert fragment in text
    assert text.endswith(".") and "\n" not in text


def test_api_rules_allow_several_thresholds_and_bounds_only_with_others() -> None:
    both = {"abs_mean_gt": 1.0, "max_gt": 2.0, "min_gt": 0.0, "mean_gt": 0.5}
    assert validate_params("TL", both) == both
    assert validate_params("WNC", {"equal_nan": False}) == {"equal_nan": 0.0}
    # DumpAnalyzer accepts bounds next to a max_min threshold
    assert validate_params("TR", {"range_start_inclusive": 0, "max_min_gt": 1})


def test_ui_rules() -> None:
    ok = {"range_start_inclusive": -1.0, "range_end_inclusive": 1.0, "range_percentage_lt": 5}
    assert validate_params("TR", ok, ui_rules=True) == ok
    assert validate_params("TL", {"max_gt": 1}, ui_rules=True) == {"max_gt": 1.0}
    cases = [
        ("TL", {"abs_mean_gt": 1, "max_gt": 2}, "one threshold at a time"),
        ("TR", {"range_start_inclusive": 0, "max_min_gt": 1}, "Range bounds go only"),
        ("WNC", {"rtol": 1e-5, "atol": 1e-8}, "set automatically"),
        ("WCL", {"abs_mean_update_ratio_gt": 1, "epsilon": 1e-9}, "set automatically"),
    ]
    for condition, params, fragment in cases:
        validate_params(condition, params)  # fine for the API
        with pytest.raises(WatchpointError, match=fragment):
            validate_params(condition, params, ui_rules=True)


def test_unknown_condition_is_a_watchpoint_error() -> None:
    with pytest.raises(WatchpointError):
        validate_params("nope", {})
    with pytest.raises(UnknownConditionError):
        Watchpoint(1, "nope")  # type: ignore[arg-type]


def test_watchpoint_params_validate_twice() -> None:
    cond, params = parse_watch_spec("WNC:equal_nan=true")
    Watchpoint(0, cond, params)


# ------------------------------------------------------------------------------ spec form
@pytest.mark.parametrize(
    ("text", "abbr", "params"),
    [
        ("TO", "TO", {}),
        ("TL:abs_mean_gt=1e10", "TL", {"abs_mean_gt": 1e10}),
        (
            "tensor_range:range_start_inclusive=-1e6,range_end_inclusive=1e6,range_percentage_lt=100",
            "TR",
            {"range_start_inclusive": -1e6, "range_end_inclusive": 1e6, "range_percentage_lt": 100},
        ),
        ("WCL:abs_mean_update_ratio_gt=1", "WCL", {"abs_mean_update_ratio_gt": 1.0}),
        (" wnc : rtol = 0.001 ", "WNC", {"rtol": 1e-3}),
        ("WNC:equal_nan=true", "WNC", {"equal_nan": 1.0}),
        ("TS:mean_lt=-3,abs_mean_lt=1e-9", "TS", {"abs_mean_lt": 1e-9, "mean_lt": -3.0}),
    ],
)
def test_parse_watch_spec(text: str, abbr: str, params: dict[str, float]) -> None:
    cond, got = parse_watch_spec(text)
    assert cond.abbr == abbr
    assert got == params
    assert list(got) == [n for n in cond.param_names if n in params]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "Empty watch spec"),
        ("XX", "Unknown condition 'XX'"),
        ("TL:", "no parameters"),
        ("TL:abs_mean_gt", "expected name=value"),
        ("TL:=1", "expected name=value"),
        ("TL:abs_mean_gt=", "expected name=value"),
        ("TL:abs_mean_gt=big", "needs a number, got 'big'"),
        ("TL:foo=1", "Unknown parameter 'foo'"),
        ("TL:max_gt=1,max_gt=2", "given twice"),
        ("TO:max_gt=1", "takes no parameters"),
        ("WNC:equal_nan=maybe", "true or false"),
        ("TL:abs_mean_gt=-5", "0 <= value < inf"),
    ],
)
def test_parse_watch_spec_errors(text: str, fragment: str) -> None:
    with pytest.raises(WatchpointError) as err:
        parse_watch_spec(text)
    assert fragment in str(err.value)
    assert str(err.value).endswith(".")


def test_spec_round_trips_and_formats_shortly() -> None:
    wp = Watchpoint(1, get_condition("TL"), {"abs_mean_gt": 1e10})
    assert wp.spec == "TL:abs_mean_gt=1e+10"
    wp = Watchpoint(2, get_condition("AR"), {
        "range_percentage_lt": 0.1,
        "range_start_inclusive": math.tanh(-8.8),
        "range_end_inclusive": math.tanh(8.8),
    })  # fmt: skip
    assert wp.spec.startswith("AR:range_start_inclusive=-0.99999")
    assert parse_watch_spec(wp.spec) == (wp.condition, wp.params)
    assert Watchpoint(3, get_condition("TO")).spec == "TO"
    assert format_value(100.0) == "100" and format_value(0.1) == "0.1"
    assert format_value(1e-5) == "1e-05" and float(format_value(math.pi)) == math.pi


def test_describe() -> None:
    def d(abbr: str, **params: float) -> str:
        return Watchpoint(1, get_condition(abbr), params).describe()

    assert d("TL", abs_mean_gt=1e10) == "TL  abs_mean > 1e+10"
    assert d("TS", abs_mean_lt=1e-9, max_lt=2) == "TS  abs_mean < 1e-09, max < 2"
    assert d("TZ", zero_percentage_ge=100) == "TZ  zero_percentage >= 100"
    assert d("TO") == "TO  Tensor overflow"
    assert d("WNC", rtol=1e-5) == "WNC  rtol=1e-05"
    assert (
        d("TR", range_start_inclusive=-1, range_end_inclusive=1, range_percentage_lt=5)
        == "TR  range_percentage < 5 in [-1, 1]"
    )
    assert d("TR", range_start_inclusive=-1, max_min_gt=3) == "TR  max_min > 3, range [-1, inf]"


# ----------------------------------------------------------------------------- wire form
@pytest.mark.parametrize("key", list(CONDITIONS))
def test_wire_params_every_parameter_in_declared_order(key: str) -> None:
    cond = CONDITIONS[key]
    first_threshold = next((p for p in cond.params if p.kind == "check" and p.visible), None)
    user = {}
    if first_threshold is not None and cond.abbr != "WNC":
        user[first_threshold.name] = 0.0 if "percentage" in first_threshold.name else 1.0
        user.update(dict.fromkeys(first_threshold.requires, 0.0))
    wp = Watchpoint(7, cond, user)
    wire = wp.wire_params()
    assert [p.name for p in wire] == list(cond.param_names)
    for p, spec in zip(wire, cond.params, strict=True):
        if p.name in user:
            assert (p.value, p.disabled) == (user[p.name], False)
        elif not spec.support_disable:
            assert (p.value, p.disabled) == (spec.default, False)
        else:
            assert (p.value, p.disabled) == (0.0, True)
    req = wp.request()
    assert req.condition == cond.proto and req.params == wire


def test_hidden_parameters_are_sent_enabled_with_defaults() -> None:
    wire = {p.name: p for p in Watchpoint(1, get_condition("WNC"), {}).wire_params()}
    assert (wire["rtol"].disabled, wire["rtol"].value) == (True, 0.0)
    assert (wire["atol"].disabled, wire["atol"].value) == (False, 1e-8)
    assert (wire["equal_nan"].disabled, wire["equal_nan"].value) == (False, 0.0)
    wire = {
        p.name: p
        for p in Watchpoint(
            1, get_condition("WCS"), {"abs_mean_update_ratio_lt": 1e-4}
        ).wire_params()
    }
    assert (wire["epsilon"].disabled, wire["epsilon"].value) == (False, 1e-9)
    wp = Watchpoint(1, get_condition("WNC"), {"atol": 1e-3})
    assert wp.wire_params()[1].value == 1e-3


def test_watchpoint_accepts_a_key_and_validates() -> None:
    wp = Watchpoint(4, "tl", {"max_gt": 3}, targets=["Default"])  # type: ignore[arg-type]
    assert wp.condition is CONDITIONS["tensor_too_large"]
    assert wp.params == {"max_gt": 3.0} and wp.targets == ("Default",)
    with pytest.raises(WatchpointError):
        Watchpoint(5, get_condition("TL"), {})


# ------------------------------------------------------------------------------------ hits
def test_error_codes_and_messages() -> None:
    assert (ErrorCode.NAN, ErrorCode.INF, ErrorCode.NO_PREV) == (1, 2, 4)
    assert (ErrorCode.OUT_OF_MEMORY, ErrorCode.NO_HISTORY, ErrorCode.NO_VALUE) == (8, 16, 32)
    assert ERROR_MESSAGES[ErrorCode.NO_PREV] == "The previous step value cannot be found."
    assert error_messages(0) == []
    assert error_messages(7) == [
        "Tensor contains NaN.",
        "A tensor contains +/-INF.",
        "The previous step value cannot be found.",
    ]
    assert error_messages(8 | 16 | 32) == [
        "The tensor size exceeds the memory limit.",
        "Graph history file is not available.",
        "Tensor has no value.",
    ]


def _hit(abbr: str, error: int, params: tuple[ParamResult, ...] = ()) -> WatchpointHit:
    return WatchpointHit(3, get_condition(abbr), TensorRef(RELU, 0, 2), error, params, order=5)


def test_hit_summary() -> None:
    value_hit = _hit(
        "TL",
        0,
        (
            ParamResult("abs_mean_gt", 1.0, False, True, 2.3025426864624023),
            ParamResult("max_gt", 10.0, False, False, 3.0),
            ParamResult("min_gt", 0.0, True),
            ParamResult("mean_gt", 0.0, True),
        ),
    )
    assert value_hit.summary() == "TL abs_mean_gt: 2.3025 > 1"
    assert not value_hit.is_error and value_hit.error_messages == []
    assert [p.name for p in value_hit.hit_params] == ["abs_mean_gt"]
    error_hit = _hit("WCL", ErrorCode.NO_PREV)
    assert error_hit.summary() == "WCL The previous step value cannot be found."
    assert error_hit.is_error
    assert _hit("TL", 3).summary() == "TL Tensor contains NaN. A tensor contains +/-INF."
    assert _hit("TO", 0).summary() == "TO contains NaN or +/-Inf"
    assert _hit("WNC", 0).summary() == "WNC unchanged since the previous step"
    ge = ParamResult("zero_percentage_ge", 100.0, False, True, 100.0)
    assert _hit("TZ", 0, (ge,)).summary() == "TZ zero_percentage_ge: 100 >= 100"


def test_hits_sort_by_order_and_come_from_results() -> None:
    result = CheckResult(True, 0, (ParamResult("max_gt", 0.0, False, True, 1.0),))
    hit = WatchpointHit.from_result(9, get_condition("TL"), TensorRef("n", 1, 0), result, 4)
    assert (hit.watchpoint_id, hit.error_code, hit.order) == (9, 0, 4)
    assert hit.params == result.params
    assert hash(hit) == hash(
        WatchpointHit.from_result(9, get_condition("TL"), TensorRef("n", 1, 0), result, 4)
    )


def test_check_watchpoints_one_pass_reported_only() -> None:
    wps = [
        Watchpoint(1, get_condition("TL"), {"max_gt": 1.0}),
        Watchpoint(2, get_condition("TS"), {"max_lt": 1.0}),
        Watchpoint(3, get_condition("TO")),
        Watchpoint(4, get_condition("TZ"), {"zero_percentage_ge": 0}, enabled=False),
        Watchpoint(5, get_condition("WCL"), {"abs_mean_update_ratio_gt": 1.0}),
    ]
    ref = TensorRef(CONV, 0, 1)
    hits = check_watchpoints(wps, np.array([0.5, 2.0]), None, ref, order=3)
    assert [(h.watchpoint_id, h.error_code) for h in hits] == [(1, 0), (5, ErrorCode.NO_PREV)]
    assert all(h.tensor == ref and h.order == 3 for h in hits)
    hits = check_watchpoints(wps, np.array([np.nan]), np.array([1.0]), ref)
    assert [(h.watchpoint_id, h.error_code) for h in hits] == [(1, 1), (2, 1), (3, 0), (5, 1)]
    assert check_watchpoints(wps, None, None, ref) == []


def test_mean_of_huge_finite_values_is_finite() -> None:
    wp = Watchpoint(0, "TL", {"mean_gt": 0.0, "abs_mean_gt": 0.0})
    (hit,) = check_watchpoints([wp], np.array([1e308, 1e308]), None, TensorRef("n", 0, 0, 0, "g"))
    actual = {p.name: p.actual for p in hit.params if not p.disabled}
    assert actual == {"abs_mean_gt": 1e308, "mean_gt": 1e308}


# --------------------------------------------------------------------------------- targets
def names(nodes: list[Node]) -> list[str]:
    return [n.name for n in nodes]


def test_resolve_whole_category() -> None:
    g = small_graph()
    assert names(resolve_targets("WCL", (), g)) == ["conv1.weight", "fc.weight", "fc.bias"]
    assert names(resolve_targets("GV", (), g)) == [RELU_GRAD, CONV_GRAD]
    assert names(resolve_targets("AR", (), g)) == [RELU, TANH]
    tensor = names(resolve_targets("TO", (), g))
    assert "cst1" not in tensor and len(tensor) == len(g) - 1
    assert names(resolve_targets("TO", (), g)) == [n.name for n in g if n.name != "cst1"]


def test_resolve_scopes_expand_within_the_category() -> None:
    g = small_graph()
    assert names(resolve_targets("AR", ["Default"], g)) == [RELU, TANH]
    assert names(resolve_targets("WL", ["Default"], g)) == ["conv1.weight", "fc.weight", "fc.bias"]
    assert names(resolve_targets("TL", ["Default/net/conv1-Conv2d"], g)) == [
        "x",
        "conv1.weight",
        CONV,
    ]
    assert names(resolve_targets("TL", ["Gradients"], g)) == [RELU_GRAD, CONV_GRAD]  # no cst1
    assert names(resolve_targets("TO", [""], g)) == names(resolve_targets("TO", (), g))


def test_resolve_named_nodes_are_kept_and_deduplicated() -> None:
    g = small_graph()
    got = resolve_targets("TO", [TANH, "cst1", "Default/net/tanh-Tanh", RELU], g)
    assert names(got) == [RELU, TANH, "cst1"]  # graph order
    # a parameter by its UI name (scope + name)
    got = resolve_targets("WCL", ["Default/net/conv1-Conv2d/conv1.weight"], g)
    assert names(got) == ["conv1.weight"]
    # an explicitly named node outside the category is the user's choice
    assert names(resolve_targets("WCL", ["moments.conv1.weight"], g)) == ["moments.conv1.weight"]


def test_resolve_unknown_target() -> None:
    with pytest.raises(WatchpointError, match="No node or scope named 'Default/nope'"):
        resolve_targets("TO", ["Default/nope"], small_graph())


# ----------------------------------------------------------------------------- recommended
def test_recommended_watchpoints_order_rules_and_targets() -> None:
    g = small_graph()
    recs = recommended_watchpoints(g, backend="GPU", step=0)
    assert [r.name for r in recs] == [
        "recommend_weight_initialization_watchpoint",
        "recommend_weight_change_too_large_watchpoint",
        "recommend_gradient_vanishing_watchpoint",
        "recommend_tensor_overflow_watchpoint",
        "recommend_tensor_all_zero_watchpoint",
        "recommend_tanh_activation_range_watchpoint",
        "recommend_relu_activation_range_watchpoint",
    ]
    by_name = {r.name: r for r in recs}
    wi = by_name["recommend_weight_initialization_watchpoint"]
    assert wi.condition == "weight_initialization" and wi.params == {"zero_percentage_ge": 100.0}
    # fc.weight and fc.bias fill Default/params, so that scope stands for them
    assert wi.targets == ("conv1.weight", "Default/params")
    wcl = by_name["recommend_weight_change_too_large_watchpoint"]
    assert wcl.params == {"abs_mean_update_ratio_gt": 1.0} and wcl.targets == wi.targets
    gv = by_name["recommend_gradient_vanishing_watchpoint"]
    assert gv.params == {"abs_mean_lt": 1e-9} and gv.targets == (RELU_GRAD, CONV_GRAD)
    # the top-level entries, less the optimizer's moments (all zero at first: TZ would stop
    # every step): Default is named by its entries, the optimizer scope by its kernel
    top = ("Default/net", "Default/params", "Default/optimizer-Momentum/ApplyMomentum-op7")
    assert by_name["recommend_tensor_overflow_watchpoint"].targets == (*top, "Gradients")
    tz = by_name["recommend_tensor_all_zero_watchpoint"]
    assert tz.params == {"zero_percentage_ge": 100.0} and tz.targets == (*top, "Gradients")
    tanh = by_name["recommend_tanh_activation_range_watchpoint"]
    assert tanh.targets == (TANH,)
    assert tanh.params == {
        "range_start_inclusive": math.tanh(-8.8),
        "range_end_inclusive": math.tanh(8.8),
        "range_percentage_lt": 0.1,
    }
    relu = by_name["recommend_relu_activation_range_watchpoint"]
    assert relu.targets == (RELU,)
    assert relu.params == {
        "range_start_inclusive": -1.0,
        "range_end_inclusive": 0.0,
        "range_percentage_gt": 99.9,
    }
    # every recommendation is a valid watchpoint whose targets resolve in the graph
    for i, rec in enumerate(recs):
        wp = Watchpoint(i + 1, get_condition(rec.condition), rec.params, rec.targets)
        assert resolve_targets(wp.condition, wp.targets, g)


def test_recommended_step_and_backend_rules() -> None:
    g = small_graph()
    later = [r.name for r in recommended_watchpoints(g, backend="GPU", step=3)]
    assert "recommend_weight_initialization_watchpoint" not in later
    ascend = [r.name for r in recommended_watchpoints(g, backend="Ascend", step=0)]
    assert ascend.index("recommend_operator_overflow_watchpoint") == 3
    oo = next(r for r in recommended_watchpoints(g, "Ascend") if r.condition == "operator_overflow")
    assert oo.targets == ("Default", "Gradients") and oo.params == {}


def test_recommended_sigmoid_and_empty_sets() -> None:
    sig = "Default/act/Sigmoid-op1"
    g = Graph("g", [Node("in", PARAM, "Parameter"), op(sig, "Sigmoid", ["in"])])
    recs = recommended_watchpoints(g)
    assert [r.name for r in recs] == [
        "recommend_tensor_overflow_watchpoint",
        "recommend_tensor_all_zero_watchpoint",
        "recommend_sigmoid_activation_range_watchpoint",
    ]
    params = recs[-1].params
    assert params["range_start_inclusive"] == pytest.approx(9.2e-8, rel=1e-2)
    assert params["range_end_inclusive"] == pytest.approx(1 - 9.2e-8, rel=1e-9)
    assert params["range_start_inclusive"] < params["range_end_inclusive"]
    assert recs[-1].targets == (sig,)
    assert recommended_watchpoints(Graph("empty", [])) == []
    flat = Graph("flat", [Node("c", CONST, "Const"), Node("Add-op1", OP, "Add", inputs=["c"])])
    assert flat.nodes["c"].scope == ""  # its consumer sits at the top level too
    overflow = recommended_watchpoints(flat)[0]
    assert overflow.condition == "tensor_overflow" and overflow.targets == ("Add-op1",)


def test_changed_keeps_what_is_not_given_and_validates_params() -> None:
    wp = Watchpoint(3, "TL", {"max_gt": 1.0}, ("a",), "g", name="mine")
    new = wp.changed(params={"abs_mean_gt": 2.0}, enabled=False)
    assert (new.id, new.targets, new.graph_name, new.name) == (3, ("a",), "g", "mine")
    assert new.params == {"abs_mean_gt": 2.0} and not new.enabled
    assert wp.params == {"max_gt": 1.0} and wp.enabled  # the original is untouched
    assert wp.changed(targets=["b"]).targets == ("b",)
    with pytest.raises(WatchpointError, match="rtol"):
        Watchpoint(1, "WNC").changed(params={"rtol": -1.0})
