"""Extension-point protocols, cycle state and the handle plugins are built with.

A plugin is a class with a `name` and the methods of the extension points it implements;
every method works on the whole node table at once (no Python loop over nodes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Protocol, runtime_checkable

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.arith import go_div
from kplan.framework.status import NodeStatus, Status

if TYPE_CHECKING:
    from kplan.sources.snapshot import Snapshot

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class CycleState(dict):
    """Per-pod scratch space shared by a plugin's extension points (fwk.CycleState)."""

    def read(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise PluginError(f"error reading {key!r} from cycleState: not found") from None

    def write(self, key: str, value: Any) -> None:
        self[key] = value


@dataclass
class Handle:
    """What plugins may read beyond the pod and the node table: the snapshot and the run's settings."""

    snapshot: "Snapshot | None" = None
    kube_version: tuple[int, ...] | None = None  # (major, minor[, patch]): see framework.versions
    now: datetime | None = None
    # The pod nominator: pending pods holding a nominated node (status.nominatedNodeName), by node name.
    nominated: dict[str, list[Pod]] = field(default_factory=dict)
    # The PodDisruptionBudgets as the run's evictions left them, once one was spent (None: the snapshot's);
    # preemption reads them through kplan.framework.preemption.disruption_budgets.
    pdbs: list | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod, cluster: ClusterState | None = None) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    """Returns None or a Status: rejected (the pod fails everywhere), Skip (its Filter is skipped),
    or Success with `node_mask` narrowing the nodes worth filtering."""

    name: str

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus: ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState, diagnosis: Any) -> Any: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    """`candidates` are the positions of the feasible nodes; Skip skips the plugin's Score."""

    name: str

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Protocol):
    """Returns int64 scores aligned with `candidates`."""

    name: str

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    """ScoreExtensions.NormalizeScore: maps raw scores (aligned with the candidates) into 0..100.

    A plugin whose mapping of each score reads only that score and the lowest and highest of all
    may say so with a class attribute `normalizes_by_extremes = True`: the replica fast path then
    keeps the other candidates' normalized scores when a node that holds neither drops out.
    """

    name: str

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None: ...


# Extension point name (as in KubeSchedulerConfiguration) -> protocol.
EXTENSION_POINTS: dict[str, type] = {
    "preEnqueue": PreEnqueuePlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
}


def default_normalize_score(scores: np.ndarray, reverse: bool = False, max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """Scales scores to 0..max_priority by the highest score, optionally reversed (helper.DefaultNormalizeScore)."""
    scores = np.asarray(scores, dtype=np.int64)
    highest = max(0, int(scores.max())) if scores.size else 0
    if highest == 0:
        return np.full_like(scores, max_priority) if reverse else scores.copy()
    out = go_div(max_priority * scores, highest)
    return max_priority - out if reverse else out


def plugin_args(args: Mapping | None, known: Mapping[str, Any], plugin: str) -> dict[str, Any]:
    """Returns args with defaults filled in; an unknown field is an input error (strict decoding)."""
    from kplan.errors import InputError
    args = dict(args or {})
    args.pop("apiVersion", None)
    args.pop("kind", None)
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise InputError(f"{plugin} args: unknown field(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known)) or 'none'}")
    return {**known, **args}


@dataclass
class Candidate:
    """A node where evicting `victims` lets the pod fit (preemption.Candidate)."""

    node: int
    name: str
    victims: list[Pod]
    pdb_violations: int = 0


@dataclass
class PostFilterResult:
    """A PostFilter plugin's answer: its status, the nominated node and what it found."""

    status: Status
    nominated: int | None = None
    victims: list[Pod] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    plugin: str = ""
    quota: list[dict] = field(default_factory=list)  # ElasticQuota usage before -> after, when any
