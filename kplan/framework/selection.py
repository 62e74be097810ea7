"""From scores to a node: the range every normalized score must keep, the candidates ranked by
total score, and selectHost's choice (upstream picks randomly among the best; kplan breaks ties by
node name, so the same inputs give the same node)."""
from __future__ import annotations

from typing import Any

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState


def out_of_range(scores: np.ndarray) -> bool:
    """Whether a plugin's normalized scores leave [MIN_NODE_SCORE, MAX_NODE_SCORE]."""
    return bool(len(scores)) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE)


def invalid_score(plugin: str) -> PluginError:
    """RunScorePlugins' error for a score out of range."""
    return PluginError(f"plugin {plugin!r} returns an invalid score, it should be "
                       f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")


def rank_candidates(total: np.ndarray, candidates: np.ndarray, cluster: ClusterState) -> np.ndarray:
    """Orders candidates by total score, highest first, then by node name (through the table's
    cached name order: no string sort per cycle)."""
    return np.lexsort((name_rank(cluster)[candidates], -total))


def name_rank(cluster: ClusterState) -> np.ndarray:
    """Returns each node's position in name order (computed once per node table)."""
    ranks = getattr(cluster, "_kplan_name_rank", None)
    if ranks is None or len(ranks) != cluster.n:
        ranks = np.empty(cluster.n, dtype=np.int64)
        ranks[np.argsort(cluster.name_array, kind="stable")] = np.arange(cluster.n)
        cluster._kplan_name_rank = ranks
    return ranks


def name_tiebreak(cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
    """Per candidate, n-1 minus its position in name order: total * n + tiebreak orders as rank_candidates
    does (highest total, then first name), so one argmax selects."""
    return cluster.n - 1 - name_rank(cluster)[candidates]


def best_position(total: np.ndarray, candidates: np.ndarray, name_ranks: np.ndarray) -> int:
    """Returns the position of rank_candidates' first element without sorting: the highest total, then the
    first name (name_ranks: each node's position in name order)."""
    tied = np.flatnonzero(total == total.max())
    return int(tied[0]) if len(tied) == 1 else int(tied[np.argmin(name_ranks[candidates[tied]])])


def slot_scores(plugin: Any, state: CycleState, pod: Pod, cluster: ClusterState,
                candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A plugin's normalized scores as (per-slot table, each candidate's slot), when it offers them
    (PodTopologySpread with one domain constraint), range-checked on the table: unused slots hold 0."""
    offered = getattr(plugin, "slot_scores", None)
    slots = offered(state, pod, cluster, candidates) if offered is not None else None
    if slots is not None and out_of_range(slots[0]):
        raise invalid_score(plugin.name)
    return slots

