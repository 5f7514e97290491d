"""What to try when a watchpoint condition hits: MindInsight's tuning notes, in one line each.

MindInsight 2.0's debugger shows, beside a hit, what the condition found and a numbered
list of things to check (its UI's `tensorTuningRule` texts, e.g. for `weight_overflow`:
"Check whether the learning rate is too high. Check whether the gradient is too large.
Check whether the optimizer algorithm is correct."). These are the same notes, shortened
to a line, keyed by condition id (`condition_catalogue.CONDITIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass

# MindInsight's one note for every tensor-level, gradient and activation condition.
_CHECK_INPUTS = "check whether the operator's input tensors are normal (trace them upstream)"
_UPDATE = "check the learning rate, the gradient and the optimizer algorithm"


@dataclass(frozen=True)
class ConditionAdvice:
    """`found`: what the hit means; `try_`: what MindInsight suggests checking."""

    found: str
    try_: str


ADVICE: dict[str, ConditionAdvice] = {
    "weight_initialization": ConditionAdvice(
        "the initial weight value may be wrong",
        "check the weight initialization algorithm in the script",
    ),
    "weight_overflow": ConditionAdvice(
        "the weight overflowed (NaN or ±Inf)",
        "check whether the learning rate is too high, the gradient too large, "
        "or the optimizer algorithm wrong",
    ),
    "weight_too_large": ConditionAdvice(
        "the weight is above the threshold",
        f"{_UPDATE}, and whether the weight was already too large before the update",
    ),
    "weight_too_small": ConditionAdvice(
        "the weight is below the threshold",
        f"{_UPDATE}, and whether the weight was already too small before the update",
    ),
    "gradient_vanishing": ConditionAdvice("the gradient vanishes", _CHECK_INPUTS),
    "gradient_too_large": ConditionAdvice("the gradient is above the threshold", _CHECK_INPUTS),
    "gradient_exploding": ConditionAdvice("the gradient overflowed (NaN or ±Inf)", _CHECK_INPUTS),
    "tensor_overflow": ConditionAdvice("the tensor overflowed (NaN or ±Inf)", _CHECK_INPUTS),
    "operator_overflow": ConditionAdvice(
        "an overflow occurred during the operator's computation", _CHECK_INPUTS
    ),
    "tensor_too_large": ConditionAdvice("the tensor is above the threshold", _CHECK_INPUTS),
    "tensor_too_small": ConditionAdvice("the tensor is below the threshold", _CHECK_INPUTS),
    "tensor_all_zero": ConditionAdvice("too many of the tensor's values are 0", _CHECK_INPUTS),
    "weight_not_changed": ConditionAdvice(
        "the weight was not updated",
        "check whether the learning rate is too low, the gradient too small, the optimizer "
        "algorithm wrong, or the weight fixed (not trainable)",
    ),
    "weight_change_too_large": ConditionAdvice(
        "the weight changed more than the threshold", _UPDATE
    ),
    "weight_change_too_small": ConditionAdvice(
        "the weight changed less than the threshold", _UPDATE
    ),
    "activation_range": ConditionAdvice(
        "the activation values are outside the configured range", _CHECK_INPUTS
    ),
    "tensor_range": ConditionAdvice(
        "the tensor values are outside the configured range", _CHECK_INPUTS
    ),
}


def advice_for(condition_id: str) -> ConditionAdvice | None:
    """MindInsight's note for a condition (None for an id it has none for)."""
    return ADVICE.get(condition_id)


__all__ = ["ADVICE", "ConditionAdvice", "advice_for"]
