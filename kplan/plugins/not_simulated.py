"""Plugins kplan accepts in a profile but does not simulate.

PrioritySort and DefaultBinder have nothing to decide in a what-if; the volume plugins and
DynamicResources need objects (PVCs, CSI drivers, ResourceClaims) kplan does not load. Each is
listed in the report as not simulated, so no answer silently depends on them.
"""
from __future__ import annotations

from typing import Mapping

NOTHING_TO_SIMULATE = ("PrioritySort", "DefaultBinder")
NOT_SIMULATED = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                 "DynamicResources")


class NotSimulated:
    """Stands in for a plugin kplan does not run; it implements no extension point."""

    def __init__(self, name: str, args: Mapping | None = None, handle=None):
        self.name = name

    @property
    def silent(self) -> bool:
        """Tells whether the plugin has nothing to simulate (so reports need not mention it)."""
        return self.name in NOTHING_TO_SIMULATE
