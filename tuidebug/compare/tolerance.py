"""When a compared pair is a divergence: a tolerance that knows the dtypes.

msprobe marks every bf16-against-fp32 row "error" only because the dtypes differ; here the
thresholds follow the lower precision of the two sides, so autocast against fp32 is judged
by what bf16 can hold. A pair diverges when
- NaN or Inf is on one side only, or at different places (always, whatever the thresholds);
- the shapes differ;
- Cosine < `cosine` (tensors of two elements or more); or
- MaxAbsErr > `atol` + `rtol` × max |golden| (the whole tensor's scale, so a tiny value's
  large relative error does not count when the tensor is large elsewhere);
- statistics only: |Max|, |Min| or |L2norm| diff > `atol` + `rtol` × |golden's|.
The defaults are DEFAULTS below (by the lower-precision dtype); `--cosine`, `--rtol` and
`--atol` replace them for every pair.

Mixed precision: where some tensor is bf16 or fp16 in one run and a wider float in the other
(autocast against fp32), the runs differ in precision (`run_precision`), and every float
tensor is judged by that lower precision's defaults, not only those whose dtype differs:
the loss, the gradients and the optimizer state stay float32 under autocast but are computed
from bf16 values and carry bf16's error (on msprobe's MLP fixture, 100 float32 rows of
cosine 0.9999+ would otherwise be divergences). A NaN or Inf on one side stays a divergence
whatever the thresholds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DEFAULTS", "Tolerance", "precision_of", "run_precision", "tolerance_for"]


@dataclass(frozen=True)
class Tolerance:
    cosine: float
    rtol: float
    atol: float


# the lower-precision side's dtype → its defaults. Same-dtype float32 runs (a code change,
# another seed that should be bit-identical) keep msprobe's own cosine bar of 0.9999.
DEFAULTS: dict[str, Tolerance] = {
    "float64": Tolerance(cosine=0.99999, rtol=1e-7, atol=1e-9),
    "float32": Tolerance(cosine=0.9999, rtol=1e-4, atol=1e-6),
    "float16": Tolerance(cosine=0.99, rtol=1e-2, atol=1e-3),
    # bf16 keeps 8 significant bits (eps 2^-7 ≈ 0.0078); a few ops accumulate a few eps
    "bfloat16": Tolerance(cosine=0.99, rtol=3e-2, atol=1e-2),
    # integers and booleans: equal or not
    "exact": Tolerance(cosine=1.0, rtol=0.0, atol=0.0),
}
_RANK = {"bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}


def precision_of(dtype: str) -> str:
    """`torch.bfloat16`, `bfloat16`, `Float16`, `float32`… → a DEFAULTS key."""
    name = dtype.lower().removeprefix("torch.").removeprefix("mindspore.")
    aliases = {"bf16": "bfloat16", "half": "float16", "float": "float32", "double": "float64"}
    name = aliases.get(name, name)
    if name in _RANK:
        return name
    if name.startswith(("int", "uint", "bool")):
        return "exact"
    return "float32"  # an unknown name: judged as float32 rather than not at all


def tolerance_for(
    target_dtype: str,
    golden_dtype: str,
    *,
    cosine: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    floor: str | None = None,
) -> Tolerance:
    """The defaults of the lower-precision side (or of `floor`, the run's precision, where
    that is lower and the tensor is a float), with the user's overrides."""
    sides = [precision_of(target_dtype), precision_of(golden_dtype)]
    floats = [s for s in sides if s in _RANK]
    if floats and floor in _RANK:
        floats.append(floor)
    key = min(floats, key=_RANK.__getitem__) if floats else "exact"
    base = DEFAULTS[key]
    return Tolerance(
        base.cosine if cosine is None else cosine,
        base.rtol if rtol is None else rtol,
        base.atol if atol is None else atol,
    )


def run_precision(dtypes: Iterable[tuple[str, str]]) -> str | None:
    """The lower precision of two runs that differ in precision: the lowest float
    precision among tensors whose two sides have different float precisions (`bfloat16`
    for autocast bf16 against fp32), or None when every tensor has one precision on both
    sides."""
    lowest: str | None = None
    for target, golden in dtypes:
        t, g = precision_of(target), precision_of(golden) if golden else ""
        if not target or not golden or t == g or t not in _RANK or g not in _RANK:
            continue
        low = min(t, g, key=_RANK.__getitem__)
        if lowest is None or _RANK[low] < _RANK[lowest]:
            lowest = low
    return lowest
