"""LimitAware (koordinator pull request #1486): keeps each node's sum of pod limits under its
allocatable times a configured limit-to-allocatable ratio, and spreads limits across nodes.

The plugin never reached koordinator's main branch; kplan follows the closed PR's code and the
proposal (docs/proposals/scheduling/20230712-limit-aware-scheduling.md):

- A node's limit-to-allocatable ratio is the JSON map in its `node.koordinator.sh/limit-to-allocatable`
  annotation (resource -> integer percent or "N%"), which replaces LimitAwareArgs'
  `defaultLimitToAllocatableRatio` entirely. There is no built-in default: a resource absent from
  the node's map is neither filtered nor scored.
- Node limit capacity = percent * allocatable / 100 (Go-truncated); allocated limits are the node's
  pods' Pod.max_limits (a container without a limit counts its request), ClusterState.allocated_limits.
- Filter: DaemonSet pods pass; a pod with no limits passes; otherwise, for cpu, memory,
  ephemeral-storage and each scalar resource the pod limits, in that order and only where the
  resource is in the node's map, the node is rejected when pod limit > capacity - allocated.
- Score: least-allocated on limits with the non-zero defaults (100m / 200Mi),
  `(capacity - allocated - podLimit) * 100 / capacity` per weighted resource in the map
  (negative when over-subscribed), weighted mean, then min-max normalized to 0..100.

Differences from the PR: a malformed annotation makes the PR's Filter and Score return an error
(which fails the pod's whole scheduling cycle); kplan rejects that node instead, with a reason
naming it, and scores it as if it had no ratio. Allocated limits are kept by ClusterState, so
there is no Reserve/Unreserve here; the PR's cache also de-duplicated pods by namespace/name.
"""
from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, readable_amount
from kplan.cluster.state import NON_ZERO_RESOURCES, ClusterState
from kplan.errors import InputError
from kplan.framework.arith import go_div
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args
from kplan.framework.resource_scoring import is_scalar_resource, parse_resource_specs
from kplan.framework.status import Code, NodeStatus, Status

NAME = "LimitAware"
ANNOTATION = "node.koordinator.sh/limit-to-allocatable"
PRE_FILTER_KEY = "preFilter" + NAME
PRE_SCORE_KEY = "preScore" + NAME

# LimitAwareArgs (the PR's v1beta2 fields) plus the proposal's `resources` spelling of the weights.
ARGS = {"scoringResourceWeights": None, "resources": None, "defaultLimitToAllocatableRatio": None}
DEFAULT_WEIGHTS = {CPU: 1, MEMORY: 1}
MAX_WEIGHT = 100
NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE)
_INT32 = (-(1 << 31), (1 << 31) - 1)


def insufficient_limit_reason(resource: str) -> str:
    """Returns the PR's reason for a resource whose limit capacity is short ("Insufficient cpu limit")."""
    return f"Insufficient {resource} limit"


def invalid_annotation_reason(node: str, error: str) -> str:
    return f"invalid {ANNOTATION} annotation on node {node}: {error}"


# -- limit-to-allocatable ratios ------------------------------------------------------------------

def _percent(value: Any) -> int:
    """Returns an IntOrString ratio entry as a percent (intstr.GetScaledValueFromIntOrPercent of 100)."""
    if value is None:
        return 0  # JSON null decodes to IntVal 0
    if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
        raise ValueError(f"cannot unmarshal {json.dumps(value)} into an int or percent string")
    if isinstance(value, (int, float)):
        if not _INT32[0] <= value <= _INT32[1]:
            raise ValueError(f"{value} overflows int32")
        return int(value)
    if isinstance(value, str):
        if not value.endswith("%"):
            raise ValueError(f"invalid type: string is not a percentage: {value!r}")
        digits = value[:-1]
        body = digits[1:] if digits[:1] in "+-" else digits
        if not body.isdigit() or not body.isascii():
            raise ValueError(f"invalid value {value!r}: not an integer percent")
        return int(digits)
    raise ValueError(f"cannot unmarshal {json.dumps(value)} into an int or percent string")


def parse_ratio(raw: Any) -> dict[str, int]:
    """Returns a LimitToAllocatableRatio (resource -> int or "N%") as resource -> percent; ValueError if malformed."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError("must be a JSON object mapping resource names to a percent")
    out = {}
    for name, value in raw.items():
        try:
            out[str(name)] = _percent(value)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    return out


def parse_annotation(text: str) -> dict[str, int]:
    """Parses the node annotation's JSON; ValueError with the problem when it is malformed."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg} at character {err.pos}") from None
    return parse_ratio(raw)


@dataclass
class LimitCapacity:
    """Per node and resource: the configured ratio (percent), whether the node's map names the
    resource, and the limit capacity percent * allocatable / 100; plus nodes with a bad annotation."""

    percent: np.ndarray  # (N, R) int64, 100 where the map does not name the resource
    configured: np.ndarray  # (N, R) bool
    capacity: np.ndarray  # (N, R) int64
    invalid: dict[int, str] = field(default_factory=dict)  # node position -> what is wrong
    width: int = 0


_CACHE: "weakref.WeakKeyDictionary[ClusterState, dict]" = weakref.WeakKeyDictionary()


def limit_capacity(cluster: ClusterState, default: Mapping[str, int]) -> LimitCapacity:
    """Returns the nodes' limit capacity under a default ratio, built once per ClusterState.

    Nodes are grouped by annotation text, so each distinct map is parsed once and broadcast.
    It is rebuilt only when the table gains resource columns.
    """
    per_cluster = _CACHE.setdefault(cluster, {})
    key = tuple(sorted(default.items()))
    cached = per_cluster.get(key)
    if cached is not None and cached.width == len(cluster.resources):
        return cached
    texts: dict[str | None, int] = {None: 0}
    codes = np.array([texts.setdefault(node.annotations.get(ANNOTATION), len(texts)) for node in cluster.nodes],
                     dtype=np.intp)
    r = len(cluster.resources)
    table_percent = np.full((len(texts), r), 100, dtype=np.int64)
    table_configured = np.zeros((len(texts), r), dtype=bool)
    errors: dict[int, str] = {}
    for text, code in texts.items():
        try:
            ratio = dict(default) if text is None else parse_annotation(text)
        except ValueError as err:
            errors[code] = str(err)
            continue
        for name, pct in ratio.items():
            k = cluster.res_index.get(name)
            if k is not None:
                table_percent[code, k] = pct
                table_configured[code, k] = True
    percent = table_percent[codes] if len(codes) else np.zeros((0, r), dtype=np.int64)
    configured = table_configured[codes] if len(codes) else np.zeros((0, r), dtype=bool)
    capacity = go_div(percent * cluster.allocatable, 100).astype(np.int64)
    invalid = {int(i): errors[int(c)] for i, c in enumerate(codes.tolist()) if c in errors} if errors else {}
    built = LimitCapacity(percent, configured, capacity, invalid, r)
    per_cluster[key] = built
    return built


# -- args -----------------------------------------------------------------------------------------

def parse_weights(args: Mapping[str, Any], plugin: str) -> dict[str, int]:
    """Returns the scoring weights from `scoringResourceWeights` (a map) or `resources` (a list).

    Defaults as the PR's SetDefaults_LimitAwareArgs: cpu and memory weight 1 when empty, and a
    weight of 0 becomes 1; validation wants weights in [0, 100].
    """
    weights, resources = args.get("scoringResourceWeights"), args.get("resources")
    if weights is not None and resources is not None:
        raise InputError(f"{plugin} args: give scoringResourceWeights or resources, not both")
    if resources is not None:
        specs = parse_resource_specs(resources, f"{plugin} args: resources")
        return {s.name: s.weight for s in specs}
    if weights is None or weights == {}:
        return dict(DEFAULT_WEIGHTS)
    if not isinstance(weights, Mapping):
        raise InputError(f"{plugin} args: scoringResourceWeights must map resource names to weights")
    out = {}
    for name, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InputError(f"{plugin} args: scoringResourceWeights.{name}: must be an integer, got {weight!r}")
        if weight < 0:
            raise InputError(f"{plugin} args: scoringResourceWeights: Invalid value: resource Weight of {name} "
                             f"should be a positive value, got {weight}")
        if weight > MAX_WEIGHT:
            raise InputError(f"{plugin} args: scoringResourceWeights: Invalid value: resource Weight of {name} "
                             f"should be less than 100, got {weight}")
        out[str(name)] = weight or 1
    return out


def parse_default_ratio(raw: Any, plugin: str = NAME) -> dict[str, int]:
    try:
        return parse_ratio(raw)
    except ValueError as err:
        raise InputError(f"{plugin} args: defaultLimitToAllocatableRatio: {err}") from None


def min_max_normalize(scores: np.ndarray) -> np.ndarray:
    """Maps scores to 0..100 by min and max as the PR's NormalizeScore (float64, truncated); all 0 if equal."""
    scores = np.asarray(scores, dtype=np.int64)
    if not scores.size:
        return scores.copy()
    low, high = int(scores.min()), int(scores.max())
    if high - low <= 0:
        return np.zeros_like(scores)
    fraction = (scores - low).astype(np.float64) / np.float64(high - low)
    return (np.float64(MAX_NODE_SCORE) * fraction).astype(np.int64)


def is_daemonset_pod(pod: Pod) -> bool:
    """Tells whether any owner reference is a DaemonSet (the PR's isDaemonSetPod)."""
    owners = (pod.raw.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" for o in owners if isinstance(o, Mapping))


@dataclass
class _PreFilterState:
    limit: np.ndarray  # (R,) the pod's max limits over the table's columns
    scalars: list[str]  # scalar resources the pod limits, checked after cpu/memory/storage
    skip: bool
    has_limits: bool


# -- the plugin -----------------------------------------------------------------------------------

def _limit_line(name: str, pod: int, allocated: int, capacity: int, percent: int, allocatable: int,
                short: bool) -> str:
    """The numbers behind a node's verdict on one resource, readable ("memory limit: pod 2Gi, allocated
    9.5Gi, capacity 12Gi (150% of allocatable 8Gi) - short by 512Mi"); a shortfall is rounded up."""
    def text(amount: int) -> str:
        return readable_amount(name, amount, round_up=False)
    line = (f"{name} limit: pod {text(pod)}, allocated {text(allocated)}, capacity {text(capacity)} "
            f"({percent}% of allocatable {text(allocatable)})")
    return line + (f" - short by {readable_amount(name, pod - (capacity - allocated))}" if short else "")


class LimitAware:
    """Rejects nodes whose pod limits would exceed allocatable x their limit-to-allocatable ratio,
    and scores nodes by the limit capacity they would have left."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        a = plugin_args(args, ARGS, NAME)
        self.handle = handle
        self.weights = parse_weights(a, NAME)
        self.default_ratio = parse_default_ratio(a["defaultLimitToAllocatableRatio"])

    def capacity(self, cluster: ClusterState) -> LimitCapacity:
        return limit_capacity(cluster, self.default_ratio)

    # -- filter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> Status | None:
        """Computes the pod's limits once (preFilterStateData); DaemonSet pods are marked to skip."""
        limits = pod.max_limits
        scalars = sorted(name for name in limits if is_scalar_resource(name))
        has_limits = any(limits.get(name, 0) != 0 for name in NATIVE) or bool(scalars)
        state.write(PRE_FILTER_KEY, _PreFilterState(cluster.vector(limits), scalars, is_daemonset_pod(pod),
                                                    has_limits))
        return None

    def filter(self, state: CycleState, pod: Pod, cluster: ClusterState) -> NodeStatus:
        """Rejects nodes short of limit capacity for a resource their ratio names."""
        st: _PreFilterState = state.read(PRE_FILTER_KEY)
        if st.skip:
            return NodeStatus.passing(cluster.n)
        lc = self.capacity(cluster)
        limit = st.limit
        if len(limit) < len(cluster.resources):
            limit = np.pad(limit, (0, len(cluster.resources) - len(limit)))
        columns = [cluster.res_index[name] for name in (*NATIVE, *st.scalars)] if st.has_limits else []
        invalid = sorted(lc.invalid)
        reasons = [insufficient_limit_reason(cluster.resources[k]) for k in columns]
        reasons += [invalid_annotation_reason(cluster.names[i], lc.invalid[i]) for i in invalid]
        short = np.zeros((cluster.n, len(reasons)), dtype=bool)
        allocated = cluster.allocated_limits
        free = lc.capacity - allocated
        for j, k in enumerate(columns):
            short[:, j] = lc.configured[:, k] & (limit[k] > free[:, k])
        for j, i in enumerate(invalid, start=len(columns)):
            short[i, j] = True
        codes = np.full(cluster.n, np.int8(Code.UNSCHEDULABLE))
        codes[invalid] = np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        allocated = allocated.copy()
        names = [cluster.resources[k] for k in columns]

        def explain(i: int) -> list[str]:
            lines = []
            for j, (k, name) in enumerate(zip(columns, names)):
                if not lc.configured[i, k]:
                    continue
                lines.append(_limit_line(name, int(limit[k]), int(allocated[i, k]), int(lc.capacity[i, k]),
                                         int(lc.percent[i, k]), int(cluster.allocatable[i, k]), bool(short[i, j])))
            if i in lc.invalid:
                lines.append(f"{ANNOTATION}: {lc.invalid[i]}")
            return lines

        return NodeStatus.from_reasons(short, reasons, codes, explain)

    # -- score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, cluster: ClusterState,
                  candidates: np.ndarray) -> Status | None:
        """Computes the pod's non-zero limits (preScoreStateData)."""
        state.write(PRE_SCORE_KEY, cluster.vector(pod.non_zero_max_limits))
        return None

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        """Weighted mean over the ratio's weighted resources of the limit capacity left, in percent."""
        pod_limit = state.get(PRE_SCORE_KEY)
        if pod_limit is None:
            pod_limit = cluster.vector(pod.non_zero_max_limits)
        candidates = np.asarray(candidates, dtype=np.intp)
        lc = self.capacity(cluster)
        total = np.zeros(len(candidates), dtype=np.int64)
        weight_sum = np.zeros(len(candidates), dtype=np.int64)
        for name, weight in self.weights.items():
            k = cluster.res_index.get(name)
            if k is None or not (name in NATIVE or is_scalar_resource(name)):
                continue
            capacity = lc.capacity[candidates, k]
            counted = lc.configured[candidates, k] & (capacity != 0)
            if name in NON_ZERO_RESOURCES:
                allocated = cluster.non_zero_limits[candidates, NON_ZERO_RESOURCES.index(name)]
            else:
                allocated = cluster.allocated_limits[candidates, k]
            pod_amount = pod_limit[k] if k < len(pod_limit) else 0
            s = go_div((capacity - (allocated + pod_amount)) * MAX_NODE_SCORE, np.where(counted, capacity, 1))
            total += np.where(counted, s * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        return np.where(weight_sum == 0, 0, go_div(total, np.maximum(weight_sum, 1))).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: np.ndarray) -> np.ndarray:
        return min_max_normalize(scores)
