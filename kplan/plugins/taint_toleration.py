"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; untolerated PreferNoSchedule taints lower the score.

Each distinct taint set of the cluster (ClusterState.taint_sets) is evaluated once per pod and
the answer is broadcast to the nodes carrying it through ClusterState.taint_set_ids.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from kplan.api.objects import Pod, Taint, Toleration
from kplan.cluster.state import ClusterState
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle, default_normalize_score, plugin_args
from kplan.framework.status import Code, NodeStatus, Status

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
# Since v1.35 (PR #134740, also in the v1.34 patch releases through #135023) the reason no longer
# names the taint; older releases printed "node(s) had untolerated taint {<key>: <value>}".
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def legacy_reason(taint: Taint) -> str:
    """Returns the reason releases before the change printed for the first untolerated taint."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def first_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration],
                      effects: Sequence[str] = DO_NOT_SCHEDULE_EFFECTS) -> Taint | None:
    """Returns the first taint with one of `effects` no toleration tolerates (FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect in effects and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def _format_taint(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


class TaintToleration:
    """Rejects nodes with an untolerated NoSchedule/NoExecute taint; favours nodes with fewer untolerated PreferNoSchedule taints."""

    name = NAME
    normalizes_by_extremes = True  # DefaultNormalizeScore: by the highest score

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        tolerations = pod.tolerations
        culprits = [first_untolerated(taints, tolerations) for taints in cluster.taint_sets]
        per_set = np.array([c is not None for c in culprits], dtype=bool)
        rejected = per_set[cluster.taint_set_ids] if per_set.size else np.zeros(cluster.n, dtype=bool)

        def explain(i: int) -> list[str]:
            taint = culprits[int(cluster.taint_set_ids[i])]
            return [f"untolerated taint {_format_taint(taint)}"] if taint is not None else []

        if versions.has(self.handle.kube_version if self.handle else None, versions.GENERIC_TAINT_REASON):
            return NodeStatus.reject_where(rejected, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED,
                                           explain)
        return self._legacy_status(culprits, cluster, explain)

    @staticmethod
    def _legacy_status(culprits: list[Taint | None], cluster: ClusterState, explain) -> NodeStatus:
        """Older releases name each node's first untolerated taint in the reason."""
        reasons = sorted({legacy_reason(t) for t in culprits if t is not None})
        column = {r: k for k, r in enumerate(reasons)}
        per_set = np.zeros((len(culprits), len(reasons)), dtype=bool)
        for s, taint in enumerate(culprits):
            if taint is not None:
                per_set[s, column[legacy_reason(taint)]] = True
        short = per_set[cluster.taint_set_ids] if len(culprits) else np.zeros((cluster.n, 0), dtype=bool)
        return NodeStatus.from_reasons(short, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, explain)

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        # An empty effect tolerates every effect, PreferNoSchedule included.
        state.write(PRE_SCORE_STATE_KEY, [t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)])
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        tolerations = state.read(PRE_SCORE_STATE_KEY)
        per_set = np.array([sum(1 for taint in taints if taint.effect == PREFER_NO_SCHEDULE
                                and not any(t.tolerates(taint) for t in tolerations))
                            for taints in cluster.taint_sets], dtype=np.int64)
        candidates = np.asarray(candidates, dtype=np.intp)
        if not per_set.size:
            return np.zeros(len(candidates), dtype=np.int64)
        return per_set[cluster.taint_set_ids[candidates]]

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)
