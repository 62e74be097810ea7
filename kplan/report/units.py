"""What every report shares: the contract's apiVersion and quantity formatting."""
from __future__ import annotations

from typing import Callable, Iterable

from kplan.api.resources import CPU, amount, format_amount, is_byte_resource

API_VERSION = "kplan/v1alpha1"
quantity = format_amount  # reports format amounts exactly as the plugins' explanations do
UNLIMITED = "unlimited"  # a quota's max at upstream's upper bound, as the reports write it
COLUMN_UNITS = ((30, "Gi"), (20, "Mi"), (10, "Ki"))  # kubectl top writes Mi; sums over nodes read better in Gi


def resource_map(amounts: dict[str, int]) -> dict[str, str]:
    """Formats a resource list as quantity strings, sorted by resource name."""
    return {r: quantity(r, v) for r, v in sorted(amounts.items())}


def column_unit(resource: str, amounts: Iterable[int], cores: bool = False) -> Callable[[int], str]:
    """Returns a formatter writing every amount of one table column (or of one resource over a
    table) in one unit, as kubectl top and describe write resources: cpu in millicores ("850m")
    while every amount is below a core, else in cores, exact ("63.8", "72"; "63.8 cores" with
    `cores`, for pages read by people who do not write quantities); bytes in the largest unit the
    largest amount reaches of Gi, Mi and Ki, to a tenth ("347.5Gi", "270Gi"); counts as they are."""
    largest = max((abs(int(a)) for a in amounts), default=0)
    if resource == CPU:
        if largest < 1000:
            return lambda a: f"{int(a)}m" if a else "0"
        if cores:
            return lambda a: _decimal(int(a), 1000, 3) + (" core" if int(a) == 1000 else " cores") if a else "0"
        return lambda a: _decimal(int(a), 1000, 3)
    if is_byte_resource(resource):
        for shift, suffix in COLUMN_UNITS:
            if largest >= 1 << shift:
                return lambda a, size=1 << shift, suffix=suffix: _decimal(int(a), size, 1) + suffix if a else "0"
        return lambda a: str(int(a))
    return lambda a: format_amount(resource, int(a))


def _decimal(value: int, unit: int, places: int) -> str:
    """value / unit to `places` decimals, trailing zeros dropped; a non-zero value too small to show
    there keeps its first two significant digits instead of reading 0."""
    text = f"{value / unit:.{places}f}".rstrip("0").rstrip(".")
    if text in ("0", "-0") and value:
        text = f"{value / unit:.2g}"
    return "0" if text == "-0" else text


def column_formatters(resources: Iterable[str], quantities: Iterable[tuple[str, str]],
                      cores: bool = False) -> dict[str, Callable[[int], str]]:
    """One column_unit per resource, chosen over every (resource, quantity string) a table shows."""
    seen: dict[str, list[int]] = {r: [] for r in resources}
    for resource, q in quantities:
        if q != UNLIMITED:
            seen.setdefault(resource, []).append(amount(resource, q))
    return {r: column_unit(r, values, cores) for r, values in seen.items()}


def in_unit(unit: dict[str, Callable[[int], str]], resource: str, q: str | None) -> str:
    """A quantity string in its resource's unit of the table (column_formatters); "-" for none; what is
    not a quantity ("unlimited") as it is."""
    if q is None:
        return "-"
    if resource not in unit or q == UNLIMITED:
        return q
    return unit[resource](amount(resource, q))
