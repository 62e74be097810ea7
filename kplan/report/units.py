"""What every report shares: the contract's apiVersion and quantity formatting."""
from __future__ import annotations

from kplan.api.resources import format_amount

API_VERSION = "kplan/v1alpha1"
quantity = format_amount  # reports format amounts exactly as the plugins' explanations do


def resource_map(amounts: dict[str, int]) -> dict[str, str]:
    """Formats a resource list as quantity strings, sorted by resource name."""
    return {r: quantity(r, v) for r, v in sorted(amounts.items())}
