"""Plugins kplan accepts in a profile but does not simulate.

PrioritySort and DefaultBinder have nothing to decide in a what-if; the volume plugins need
objects (PVCs, PVs, StorageClasses, CSI drivers) kplan does not load. Each is listed in the report
as not simulated, so no answer silently depends on them. DynamicResources has a module of its own
(kplan.plugins.dynamic_resources): its cycle state and PostFilter shape every message.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.framework.status import Status

NOTHING_TO_SIMULATE = ("PrioritySort", "DefaultBinder")
NOT_SIMULATED = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")
# VolumeBinding is a Score plugin, so the profile's score weights list it (weight 1 by default);
# its PreScore skips unless the StorageCapacityScoring gate (off by default) builds its scorer.
SCORE_SKIPPED = ("VolumeBinding",)


class NotSimulated:
    """Stands in for a plugin kplan does not run; it implements no extension point."""

    simulated = False  # reports list it as not simulated (unless silent)

    def __init__(self, name: str, args: Mapping | None = None, handle=None):
        self.name = name

    @property
    def silent(self) -> bool:
        """Tells whether the plugin has nothing to simulate (so reports need not mention it)."""
        return self.name in NOTHING_TO_SIMULATE


class ScoreSkipped(NotSimulated):
    """A not-simulated Score plugin whose PreScore skips it, as upstream's does by default."""

    def pre_score(self, state, pod, cluster, candidates) -> Status:
        return Status.skip()

    def score(self, state, pod, cluster, candidates) -> np.ndarray:
        return np.zeros(len(candidates), dtype=np.int64)


def new(name: str, args: Mapping | None = None, handle=None) -> NotSimulated:
    return (ScoreSkipped if name in SCORE_SKIPPED else NotSimulated)(name, args, handle)
