"""What every report shares: the contract's apiVersion and quantity formatting."""
from __future__ import annotations

from kplan.api.quantity import format_quantity
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY

API_VERSION = "kplan/v1alpha1"


def quantity(resource: str, amount: int) -> str:
    """Formats an amount as a Kubernetes quantity string ("2500m", "4Gi", "3")."""
    if resource == CPU:
        return format_quantity(int(amount), "milli")
    is_bytes = resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-")
    return format_quantity(int(amount), "bytes" if is_bytes else "value")


def resource_map(amounts: dict[str, int]) -> dict[str, str]:
    """Formats a resource list as quantity strings, sorted by resource name."""
    return {r: quantity(r, v) for r, v in sorted(amounts.items())}
