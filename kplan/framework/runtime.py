"""The scheduling cycle: PreEnqueue, PreFilter, Filter, PreScore, Score, NormalizeScore, Reserve.

One Framework per profile, built from a Profile the way frameworkImpl is: plugins instantiated
once, MultiPoint expanded per extension point, score weights resolved.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from kplan.api.elastic_quota import KIND as EQ_KIND, load_quotas, quota_changes
from kplan.api.objects import Pod
from kplan.api.storage import claim_names
from kplan.cluster.state import ClusterState
from kplan.errors import InputError, PluginError
from kplan.framework.arith import without
from kplan.framework.config import Profile
from kplan.framework.interfaces import (
    EXTENSION_POINTS, MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, FilterPlugin, Handle,
    NormalizeScorePlugin, PostFilterResult,
)
from kplan.framework.node_local import (
    LEVELED_PLUGINS, ROW_PLUGINS, STATIC_PLUGINS, STATIC_WITHOUT_POD_TERMS, row_view,
)
from kplan.framework.node_filters import Diagnosis, filters_on_node_with, nominated_on
from kplan.framework.status import Code, NodeStatus, Status, fit_error

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
NEEDS_PREEMPTION = "NeedsPreemption"
SCHEDULING_GATED = "SchedulingGated"

# schedulePod's ErrNoNodesAvailable: a snapshot without nodes ends the cycle before PreFilter, with no
# PostFilter (UnschedulableAndUnresolvable); the FailedScheduling message is the error's text.
NO_NODES_IN_SNAPSHOT = "no nodes available to schedule pods"
NARROWED_OUT = -2  # a node outside the PreFilterResult: absent from the diagnosis


@dataclass
class CycleResult:
    """Everything one scheduling cycle decided for one pod, with the facts behind it."""

    pod: Pod
    profile: str
    outcome: str
    node: int | None = None
    message: str = ""
    prefilter_status: Status | None = None
    # Filter diagnosis: per node, the index of the first rejecting filter plugin (-1 none,
    # NARROWED_OUT outside the PreFilterResult), its code, and each plugin's NodeStatus.
    failed_plugin: np.ndarray | None = None
    filter_plugins: list[str] = field(default_factory=list)
    filter_statuses: dict[str, NodeStatus] = field(default_factory=dict)
    narrowed_reason: str = ""
    # Nodes rejected only with the pods nominated to them added: their status from that pass.
    nominated_statuses: dict[int, Status] = field(default_factory=dict)
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    raw_scores: dict[str, np.ndarray] = field(default_factory=dict)  # before NormalizeScore
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # normalized, before weight
    weights: dict[str, int] = field(default_factory=dict)
    total: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ranking: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))  # positions into candidates
    not_simulated: list[str] = field(default_factory=list)
    post_filter: Any = None

    @property
    def feasible_count(self) -> int:
        return len(self.candidates)

    def reasons_of(self, i: int) -> tuple[str, list[str]]:
        """Returns (plugin, reasons) that rejected node i, or ("", []) for a feasible node."""
        if self.prefilter_status is not None and self.prefilter_status.is_rejected:
            return self.prefilter_status.plugin, list(self.prefilter_status.reasons)
        if i in self.nominated_statuses:
            status = self.nominated_statuses[i]
            return status.plugin, list(status.reasons)
        k = int(self.failed_plugin[i]) if self.failed_plugin is not None else -1
        if k == NARROWED_OUT:
            return "", [self.narrowed_reason]
        if k < 0:
            return "", []
        name = self.filter_plugins[k]
        return name, self.filter_statuses[name].reasons_of(i)

    def tied_with_selected(self) -> np.ndarray:
        """Returns the positions (into candidates) that share the selected node's total score."""
        if not len(self.ranking):
            return self.ranking
        return np.flatnonzero(self.total == self.total[self.ranking[0]])


class Framework:
    """Runs one profile's plugins for a pod over the node table."""

    def __init__(self, profile: Profile, registry: Mapping[str, Callable[[Mapping | None, Handle], Any]],
                 handle: Handle | None = None):
        self.profile = profile
        self.registry = registry
        self.handle = handle or Handle()
        self.plugins = self._instantiate(profile)
        self.points = {point: self._expand(point) for point in EXTENSION_POINTS}
        self.weights = self._score_weights()
        self._normalizing = {p.name for p in self.points["score"] if isinstance(p, NormalizeScorePlugin)}
        self.not_simulated = [p.name for p in self.plugins.values()
                              if not getattr(p, "simulated", True) and not p.silent]

    # -- construction -------------------------------------------------------------------------

    def _instantiate(self, profile: Profile) -> dict[str, Any]:
        needed: list[str] = []
        for plugin_set in profile.plugins.values():
            for ref in plugin_set.enabled:
                if ref.name not in needed:
                    needed.append(ref.name)
        unknown = [n for n in (*needed, *profile.plugin_config) if n not in self.registry]
        if unknown:
            raise InputError(f"profile {profile.scheduler_name}: plugin {unknown[0]!r} does not exist; "
                             f"known plugins: {', '.join(sorted(self.registry))}")
        return {name: self.registry[name](profile.plugin_config.get(name), self.handle) for name in needed}

    def _expand(self, point: str) -> list[Any]:
        """expandMultiPointPlugins for one extension point, in upstream's order."""
        protocol = EXTENSION_POINTS[point]
        explicit = self.profile.plugins.get(point)
        enabled = [ref.name for ref in explicit.enabled] if explicit else []
        disabled = set(explicit.disabled) if explicit else set()
        for name in enabled:
            if not isinstance(self.plugins[name], protocol):
                raise InputError(f"profile {self.profile.scheduler_name}: plugin {name!r} "
                                 f"does not extend {point}")
        multi: list[str] = []
        overrides: set[str] = set()
        if "*" not in disabled:
            for ref in self.profile.plugins["multiPoint"].enabled:
                if not isinstance(self.plugins[ref.name], protocol) or ref.name in disabled:
                    continue
                if ref.name in enabled:
                    overrides.add(ref.name)
                elif ref.name in multi:
                    raise InputError(f"profile {self.profile.scheduler_name}: plugin {ref.name!r} "
                                     f"already registered as {point}")
                else:
                    multi.append(ref.name)
        order = ([n for n in enabled if n in overrides] + multi + [n for n in enabled if n not in overrides])
        return [self.plugins[n] for n in order]

    def _score_weights(self) -> dict[str, int]:
        """getScoreWeights: the Score point's own weight wins over MultiPoint's; 0 becomes 1."""
        weights: dict[str, int] = {}
        scoring = {p.name for p in self.points["score"]}
        for ref in (*self.profile.plugins["score"].enabled, *self.profile.plugins["multiPoint"].enabled):
            if ref.name in scoring and ref.name not in weights:
                weights[ref.name] = ref.weight or 1
        return weights

    # -- the cycle ------------------------------------------------------------------------------

    def schedule(self, pod: Pod, cluster: ClusterState, assume: bool = True,
                 apply_preemption: bool = True, rank: bool = True, report: bool | None = None,
                 reserve: bool = True) -> CycleResult:
        """Runs one scheduling cycle; with `assume`, a scheduled pod is placed in the table. Without
        `reserve` the Reserve plugins do not run (a what-if that keeps nothing, such as a preview).

        A pod no node fits goes through PostFilter (preemption). When it nominates a node, the
        outcome is NeedsPreemption and, with `apply_preemption`, the victims are evicted and the
        pod placed on the nominated node, so later pods see what the preemption left.

        With `rank=False` (the fast path for many replicas, which builds no report) the candidates
        are not sorted: `ranking` holds only the selected one, chosen as the full path chooses
        (highest total score, ties broken by node name); and a preemption's ElasticQuota changes,
        which only a report shows, are not computed unless `report` asks for them.
        """
        report = rank if report is None else report
        result = CycleResult(pod, self.profile.scheduler_name, UNSCHEDULABLE,
                             weights=dict(self.weights), not_simulated=list(self.not_simulated))
        gate = self._pre_enqueue(pod, cluster)
        if gate is not None:
            result.outcome = SCHEDULING_GATED
            result.prefilter_status = gate
            result.message = gate.message
            return result
        if cluster.n == 0:
            result.message = NO_NODES_IN_SNAPSHOT
            return result
        state = CycleState()
        prefilter, skipped, narrowed = self._pre_filter(state, pod, cluster)
        if prefilter is not None and prefilter.is_rejected:
            result.prefilter_status = prefilter
            codes = np.full(cluster.n, int(prefilter.code), dtype=np.int8)
            self._post_filter(state, pod, cluster, result, Diagnosis(self, result, codes, skipped, None),
                              apply_preemption, report, prefilter_msg=prefilter.message)
            return result
        feasible = self._filter(state, pod, cluster, skipped, narrowed, result)
        result.candidates = np.flatnonzero(feasible)
        if not len(result.candidates):
            diagnosis = Diagnosis(self, result, self._node_codes(result, cluster.n), skipped,
                                  narrowed.node_mask if narrowed is not None else None)
            self._post_filter(state, pod, cluster, result, diagnosis, apply_preemption, report,
                              histogram=self.histogram(result))
            return result
        self._score(state, pod, cluster, result, rank)
        node = int(result.candidates[result.ranking[0]])
        if not reserve:
            result.node = node
        elif not self._reserved(state, result, cluster, node):
            return result
        result.outcome = SCHEDULED
        if assume:
            cluster.assume(pod, node)
        return result

    def _pre_enqueue(self, pod: Pod, cluster: ClusterState) -> Status | None:
        for plugin in self.points["preEnqueue"]:
            status = plugin.pre_enqueue(pod, cluster)
            if status is not None and not status.is_success:
                status.plugin = plugin.name
                return status
        return None

    def _pre_filter(self, state: CycleState, pod: Pod, cluster: ClusterState):
        """RunPreFilterPlugins: an UnschedulableAndUnresolvable status stops at once, Unschedulable
        lets the rest run; node masks of PreFilterResults intersect."""
        skipped: set[str] = set()
        rejected: Status | None = None
        narrowed: Status | None = None  # the intersected PreFilterResult, its plugins as reasons
        for plugin in self.points["preFilter"]:
            status = run_pre_filter(plugin, state, pod, cluster)
            if status.is_skip:
                skipped.add(plugin.name)
                continue
            if status.is_rejected:
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return status, skipped, narrowed
                rejected = status
                continue
            if status.node_mask is not None:
                if narrowed is None:
                    narrowed = Status(node_mask=status.node_mask, reasons=(plugin.name,))
                else:
                    narrowed = Status(node_mask=narrowed.node_mask & status.node_mask,
                                      reasons=(*narrowed.reasons, plugin.name))
                if not narrowed.node_mask.any():
                    names = sorted(narrowed.reasons)
                    msg = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1 else
                           f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously")
                    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), names[0]), skipped, narrowed
        return rejected, skipped, narrowed

    def _filter(self, state: CycleState, pod: Pod, cluster: ClusterState, skipped: set[str],
                narrowed: Status | None, result: CycleResult) -> np.ndarray:
        """RunFilterPlugins per node: the first rejecting plugin decides the node's status."""
        failed = np.full(cluster.n, -1, dtype=np.int16)
        alive = np.ones(cluster.n, dtype=bool)
        if narrowed is not None:
            failed[~narrowed.node_mask] = NARROWED_OUT
            alive &= narrowed.node_mask
            result.narrowed_reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowed.reasons))}]"
        plugins: list[FilterPlugin] = [p for p in self.points["filter"] if p.name not in skipped]
        for k, plugin in enumerate(plugins):
            if not alive.any():
                break
            status = plugin.filter(state, pod, cluster)
            if (status.code[alive] == Code.ERROR).any():
                raise status.error or PluginError(f"running Filter plugin {plugin.name!r}: {status.reasons}")
            hit = alive & status.rejected
            failed[hit] = k
            alive &= ~hit
            result.filter_statuses[plugin.name] = status
        result.filter_plugins = [p.name for p in plugins]
        result.failed_plugin = failed
        if self.handle.nominated:
            self._filter_nominated(state, pod, cluster, skipped, narrowed, result, alive)
        return alive

    def _filter_nominated(self, state: CycleState, pod: Pod, cluster: ClusterState, skipped: set[str],
                          narrowed: Status | None, result: CycleResult, alive: np.ndarray) -> None:
        """RunFilterPluginsWithNominatedPods' first pass, on the few nodes that pods of equal or higher
        priority are nominated to: a node they would no longer fit beside the pod rejects it, with
        the status of that pass (the pass without them is the vectorized one above)."""
        diagnosis = Diagnosis(self, result, np.zeros(cluster.n, dtype=np.int8), skipped,
                              narrowed.node_mask if narrowed is not None else None)
        for name in self.handle.nominated:
            i = cluster.index.get(name)
            if i is None or result.failed_plugin[i] == NARROWED_OUT:
                continue
            nominated = nominated_on(pod, cluster, i, diagnosis)
            if not nominated:
                continue
            status = filters_on_node_with(state, pod, cluster, i, diagnosis, nominated)
            if not status.is_success:
                alive[i] = False
                result.failed_plugin[i] = result.filter_plugins.index(status.plugin)
                result.nominated_statuses[i] = status

    def histogram(self, result: CycleResult) -> dict[str, int]:
        """Counts reasons over the nodes the filters rejected (NodeToStatus's explicit nodes), and
        the absent nodes' status for every node outside the PreFilterResult (FitError.Error)."""
        counts: dict[str, int] = {}
        absent = int((result.failed_plugin == NARROWED_OUT).sum())
        if absent:
            counts[result.narrowed_reason] = absent
        overridden = np.zeros(len(result.failed_plugin), dtype=bool)
        for i, status in result.nominated_statuses.items():
            overridden[i] = True
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        for k, name in enumerate(result.filter_plugins):
            status = result.filter_statuses.get(name)
            mine = (result.failed_plugin == k) & ~overridden
            if status is None or status.reason_mask is None or not mine.any():
                continue
            for reason, count in zip(status.reasons, status.reason_mask[mine].sum(axis=0).tolist()):
                if count:
                    counts[reason] = counts.get(reason, 0) + count
        return counts

    def _score(self, state: CycleState, pod: Pod, cluster: ClusterState, result: CycleResult,
               rank: bool = True) -> None:
        """RunPreScorePlugins, RunScorePlugins (normalize, check range, weigh) and selectHost."""
        candidates = result.candidates
        skipped = set()
        for plugin in self.points["preScore"]:
            status = plugin.pre_score(state, pod, cluster, candidates)
            if status is not None and status.is_skip:
                skipped.add(plugin.name)
            elif status is not None and not status.is_success:
                raise PluginError(f"running PreScore plugin {plugin.name!r}: {status.message}")
        total = np.zeros(len(candidates), dtype=np.int64)
        for plugin in self.points["score"]:
            if plugin.name in skipped:
                continue
            scores = np.asarray(plugin.score(state, pod, cluster, candidates), dtype=np.int64)
            result.raw_scores[plugin.name] = scores
            if plugin.name in self._normalizing:
                scores = np.asarray(plugin.normalize_score(state, pod, scores), dtype=np.int64)
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                raise PluginError(f"plugin {plugin.name!r} returns an invalid score, it should be "
                                  f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
            result.scores[plugin.name] = scores
            total += scores * self.weights[plugin.name]
        result.total = total
        # Upstream picks randomly among the best; kplan breaks ties by node name.
        if rank:
            result.ranking = rank_candidates(total, candidates, cluster)
        else:
            result.ranking = np.array([_best(total, candidates, name_rank(cluster))], dtype=np.intp)

    def _node_codes(self, result: CycleResult, n: int) -> np.ndarray:
        """Each node's status code after Filter (NodeToStatus): the first rejecting plugin's code."""
        codes = np.zeros(n, dtype=np.int8)
        failed = result.failed_plugin
        codes[failed == NARROWED_OUT] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        for k, name in enumerate(result.filter_plugins):
            mine = failed == k
            if mine.any():
                codes[mine] = result.filter_statuses[name].code[mine]
        for i, status in result.nominated_statuses.items():
            codes[i] = status.code
        return codes

    def _post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState, result: CycleResult,
                     diagnosis: Diagnosis, apply_preemption: bool, report: bool, prefilter_msg: str = "",
                     histogram: Mapping[str, int] | None = None) -> None:
        """RunPostFilterPlugins, then the FitError message with the PostFilter status appended."""
        outcome = self._run_post_filter(state, pod, cluster, diagnosis)
        result.post_filter = outcome
        post_msg = outcome.status.message if outcome is not None else ""
        result.message = fit_error(cluster.n, prefilter_msg=prefilter_msg, histogram=histogram,
                                   post_filter_msg=post_msg)
        if outcome is not None and outcome.status.is_success and outcome.nominated is not None:
            result.outcome = NEEDS_PREEMPTION
            result.node = outcome.nominated
            if report:
                outcome.quota = self._quota_changes(pod, cluster, outcome.victims)
            if apply_preemption:
                self.apply_preemption(state, result, cluster)

    def _run_post_filter(self, state: CycleState, pod: Pod, cluster: ClusterState,
                         diagnosis: Diagnosis) -> PostFilterResult | None:
        """RunPostFilterPlugins: Success ends the run (its status names no plugin), and so do
        UnschedulableAndUnresolvable and Error (naming the plugin); Unschedulable reasons are
        joined in profile order and the status names the first plugin that answered so. The
        answer kept is the last one that found something (candidates, a nominated node)."""
        reasons: list[str] = []
        rejector = ""
        kept: PostFilterResult | None = None
        for plugin in self.points["postFilter"]:
            answer = plugin.post_filter(state, pod, cluster, diagnosis)
            answer.plugin = plugin.name
            code = answer.status.code
            if code == Code.SUCCESS:
                answer.status.plugin = ""
                return answer
            if code != Code.UNSCHEDULABLE:  # UnschedulableAndUnresolvable or Error
                answer.status.plugin = plugin.name
                return answer
            if kept is None or answer.candidates or answer.nominated is not None:
                kept = answer
            reasons.extend(answer.status.reasons)
            rejector = rejector or plugin.name
        if kept is None:
            return None
        return PostFilterResult(Status(Code.UNSCHEDULABLE, tuple(reasons), rejector),
                                candidates=kept.candidates, plugin=kept.plugin)

    def _quota_changes(self, pod: Pod, cluster: ClusterState, victims: list[Pod]) -> list[dict]:
        snapshot = self.handle.snapshot
        raws = snapshot.objects.get(EQ_KIND, []) if snapshot is not None else []
        if not raws:
            return []
        quotas, _ = load_quotas(raws)
        return quota_changes(quotas, (p for pods in cluster.pods_by_node for p in pods), pod, victims)

    def apply_preemption(self, state: CycleState, result: CycleResult, cluster: ClusterState) -> None:
        """Evicts the victims (the plugins' pod-delete events) and places the pod on its nominated node."""
        node = result.post_filter.nominated
        for victim in result.post_filter.victims:
            cluster.forget(victim, node)
            for plugin in self.plugins.values():
                if hasattr(plugin, "pod_deleted"):
                    plugin.pod_deleted(victim)
        if self._reserved(state, result, cluster, node):
            cluster.assume(result.pod, node)

    def _reserved(self, state: CycleState, result: CycleResult, cluster: ClusterState, node: int) -> bool:
        """Reserves the pod on its node, as the scheduling cycle does before assuming it. A Reserve
        plugin that rejects it makes the pod unschedulable with a FitError over that one node, its
        victims (if it preempted) staying evicted; a plugin error stops the run. Either way every
        Reserve plugin's Unreserve runs first."""
        status = self.reserve(state, result.pod, cluster, node)
        if status is None:
            result.node = node
            return True
        if not status.is_rejected:
            raise PluginError(f"running Reserve plugin {status.plugin!r}: {status.message}")
        result.outcome, result.node = UNSCHEDULABLE, None
        result.message = fit_error(1, histogram={reason: 1 for reason in status.reasons})
        return False

    def reserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> Status | None:
        """RunReservePluginsReserve: each Reserve plugin in order; the first that does not succeed
        stops it, RunReservePluginsUnreserve then undoes every Reserve plugin, and its status (naming
        the plugin) is returned. None when all succeeded."""
        for plugin in self.points["reserve"]:
            status = plugin.reserve(state, pod, cluster, node)
            if status is not None and not status.is_success:
                status.plugin = plugin.name
                self.unreserve(state, pod, cluster, node)
                return status
        return None

    def unreserve(self, state: CycleState, pod: Pod, cluster: ClusterState, node: int) -> None:
        """RunReservePluginsUnreserve: every Reserve plugin's Unreserve, in the reverse order of Reserve."""
        for plugin in reversed(self.points["reserve"]):
            plugin.unreserve(state, pod, cluster, node)


def run_pre_filter(plugin, state: CycleState, pod: Pod, cluster: ClusterState) -> Status:
    """One plugin's PreFilter as the framework takes it: no status is Success, a rejection names the
    plugin, an Error stops the run."""
    status = plugin.pre_filter(state, pod, cluster) or Status()
    if status.code == Code.ERROR:
        raise PluginError(f"running PreFilter plugin {plugin.name!r}: {status.message}")
    if status.is_rejected:
        status.plugin = plugin.name
    return status


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


def _tiebreak(cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
    """Per candidate, n-1 minus its position in name order: total * n + tiebreak orders as rank_candidates
    does (highest total, then first name), so one argmax selects."""
    return cluster.n - 1 - name_rank(cluster)[candidates]


def _best(total: np.ndarray, candidates: np.ndarray, name_ranks: np.ndarray) -> int:
    """Returns the position of rank_candidates' first element without sorting: the highest total, then the
    first name (name_ranks: each node's position in name order)."""
    tied = np.flatnonzero(total == total.max())
    return int(tied[0]) if len(tied) == 1 else int(tied[np.argmin(name_ranks[candidates[tied]])])


def _slot_scores(plugin: Any, state: CycleState, pod: Pod, cluster: ClusterState,
                 candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A plugin's normalized scores as (per-slot table, each candidate's slot), when it offers them
    (PodTopologySpread with one domain constraint), range-checked on the table: unused slots hold 0."""
    slot_scores = getattr(plugin, "slot_scores", None)
    slots = slot_scores(state, pod, cluster, candidates) if slot_scores is not None else None
    if slots is not None and len(slots[0]) and (slots[0].min() < MIN_NODE_SCORE or slots[0].max() > MAX_NODE_SCORE):
        raise PluginError(f"plugin {plugin.name!r} returns an invalid score, it should be "
                          f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
    return slots


# -- replicas of one template: the incremental fast path ---------------------------------------------

def _plus_view(cluster: ClusterState, pod: Pod, m: int) -> ClusterState:
    """Returns a view of the whole table with m more copies of the pod on every node, in the
    resource columns only (what ClusterState.assume adds to them, m times)."""
    import copy
    from kplan.cluster.state import NON_ZERO_RESOURCES
    view = copy.copy(cluster)
    nz = np.array([pod.non_zero_requests.get(r, 0) for r in NON_ZERO_RESOURCES], dtype=np.int64)
    nzl = np.array([pod.non_zero_max_limits[r] for r in NON_ZERO_RESOURCES], dtype=np.int64)
    view.requested = cluster.requested + m * cluster.vector(pod.requests)
    view.non_zero_requested = cluster.non_zero_requested + m * nz
    view.pod_count = cluster.pod_count + m
    view.pods_total = cluster.pods_total + m * cluster.n
    view.allocated_limits = cluster.allocated_limits + m * cluster.vector(pod.max_limits)
    view.non_zero_limits = cluster.non_zero_limits + m * nzl
    return view


class _Template:
    """What one template's cycles share: per cached plugin, its state, filter mask and raw scores."""

    def __init__(self, spec: Any, plan: tuple):
        self.spec = spec  # held so that its id is not reused while cached
        self.cached, self.pre_filters, self.filters, self.pre_scores, self.scores = plan
        self.states: dict[str, CycleState | None] = {}
        self.rejected: dict[str, np.ndarray] = {}  # plugin -> (N,) bool
        self.raw: dict[str, np.ndarray] = {}  # plugin -> (N,) int64, valid where feasible
        self.narrowed: np.ndarray | None = None  # cached plugins' PreFilterResult
        self.score_skipped: set[str] = set()
        self.fingerprint: tuple = ()
        self.cycles = 0
        # Level tables: per node the replicas placed since they were built, and per plugin the
        # filter rejections / raw scores with 1..LEVELS more replicas on each node.
        self.level: np.ndarray | None = None
        self.rejected_at: dict[str, list[np.ndarray]] = {}
        self.raw_at: dict[str, list[np.ndarray]] = {}
        # Kept up to date row by row: the cached plugins' feasibility, the weighted sum of their
        # scores that need no normalization, and (per candidate set) the normalized ones' sum.
        self.feasible: np.ndarray | None = None
        self.plain_total: np.ndarray | None = None
        self.plain: list[tuple[str, int]] = []
        self.normalized: list[tuple[Any, int]] = []
        self.last_candidates: np.ndarray | None = None
        self.normalized_total: np.ndarray | None = None
        # The cached plugins' candidates (flatnonzero of `feasible`) and, aligned with them, the
        # normalized part, the total and the selection key (_select_keys), patched row by row:
        # a placement changes one row; None when a node's feasibility flipped.
        self.base: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        # Per normalized plugin over the base's candidates: (lowest, how many, highest, how many)
        # of its raw scores, so dropping a node that holds neither alone keeps the normalization.
        self.extremes: list[tuple[int, int, int, int]] | None = None


def _claims_made_for(pod: Pod) -> bool:
    """Whether controllers make claims for the pod, named after it: its ephemeral volumes' claims and
    the ResourceClaims of its ResourceClaimTemplates."""
    return (any(ephemeral for _, ephemeral in claim_names(pod.spec, pod.name))
            or any(isinstance(c, Mapping) and c.get("resourceClaimTemplateName")
                   for c in pod.spec.get("resourceClaims") or ()))


class ReplicaScheduler:
    """Schedules pods one after another like Framework.schedule(assume=True, rank=False), incrementally.

    Pods sharing a template (the same `spec` object, as kplan.api.workloads makes replicas) reuse
    the filter results and raw scores of the template-and-node-only plugins (STATIC_PLUGINS, and
    InterPodAffinity for a template without pod (anti-)affinity terms), and of the row-local ones
    (ROW_PLUGINS) with only the row of the last placement updated: re-run on a one-row view, or,
    once a template has placed LEVELS_AFTER replicas, read from tables of each node's rows with
    1..LEVELS more replicas, computed over all nodes at once. The other plugins run every cycle as
    usual. Normalization, the total and the choice (highest total, ties by name) are redone over
    the current candidates, so the node chosen is the full path's. While no per-cycle filter
    narrows them, the candidates and the cached plugins' totals and selection keys over them are
    kept too, patched at the placed row; they are recomputed only when a node's feasibility flips.

    A cycle where no node fits, or the cluster changed behind its back (pod counts differ from what
    it expects), goes through Framework.schedule. The scheduler must be the only writer of the
    cluster between calls, or `invalidate()` must be called.
    """

    LEVELS = 16
    LEVELS_AFTER = 32
    reuse_answers = True  # False: every replica runs its cycle (tests compare both ways)

    def __init__(self, framework: Framework, cluster: ClusterState):
        self.fw = framework
        self.cluster = cluster
        self.template: _Template | None = None
        names = {p.name for p in framework.plugins.values()}
        self.usable = not (any(p.name in STATIC_PLUGINS | STATIC_WITHOUT_POD_TERMS | ROW_PLUGINS
                               for p in (*framework.points["reserve"], *framework.points["preEnqueue"])))
        self.names = names
        self._plans: dict[frozenset, tuple] = {}
        # Shared by every fast-path result (read-only): the same for each cycle of the profile.
        self._weights = dict(framework.weights)
        self._one = np.zeros(1, dtype=np.intp)
        # The last replica that did not fit: (its answer key, the table's generation, its result).
        # The next replica of the same key meets the same table and gets the same answer.
        self._last_failure: tuple | None = None

    def _plan(self, pod: Pod) -> tuple:
        """The plan of an incremental cycle for a template, with the protocol checks done once."""
        from kplan.cluster.pod_index import pod_affinity_terms
        cached = (STATIC_PLUGINS | ROW_PLUGINS) & self.names
        if not any(pod_affinity_terms(pod).values()):
            cached |= STATIC_WITHOUT_POD_TERMS & self.names
        cached = frozenset(cached)
        plan = self._plans.get(cached)
        if plan is None:
            points, fw = self.fw.points, self.fw
            plan = self._plans[cached] = (
                cached,
                [p for p in points["preFilter"] if p.name not in cached],
                [p for p in points["filter"] if p.name not in cached],
                [p for p in points["preScore"] if p.name not in cached],
                [(p, p.name in cached, isinstance(p, NormalizeScorePlugin), fw.weights[p.name])
                 for p in points["score"]])
        return plan

    def invalidate(self) -> None:
        self.template = None

    def _fingerprint(self) -> tuple:
        c = self.cluster
        return (c.n, len(c.resources), c.pods_total)

    def schedule(self, pod: Pod, apply_preemption: bool = False) -> CycleResult:
        key = self._answer_key(pod, apply_preemption)
        last = self._last_failure
        if key is not None and last is not None and last[0] == key and last[1] == self.cluster.generation:
            return dataclasses.replace(last[2], pod=pod)
        generation = self.cluster.generation
        t = self.template
        if t is None or t.spec is not pod.spec or t.fingerprint != self._fingerprint():
            result = self._full(pod, apply_preemption)
        else:
            result = self._incremental(pod, t, apply_preemption)
        # Kept only when the cycle left the table as it found it (no preemption applied, nothing bound).
        unchanged = key is not None and result.outcome != SCHEDULED and self.cluster.generation == generation
        self._last_failure = (key, generation, result) if unchanged and self.reuse_answers else None
        return result

    def _answer_key(self, pod: Pod, apply_preemption: bool) -> tuple | None:
        """What a cycle reads of a replica: its template (the spec object, held by the key), namespace,
        labels, annotations, owners and priority. None for a pod whose answer depends on its own name
        or status (claims made for it, a nomination, a reported status) or that the nominator holds."""
        status = pod.raw.get("status") or {}
        if any(k != "phase" for k in status) or _claims_made_for(pod):
            return None
        if any(p.key == pod.key for pods in self.fw.handle.nominated.values() for p in pods):
            return None
        owners = tuple((o.get("apiVersion"), o.get("kind"), o.get("name"), o.get("uid"), o.get("controller"))
                       for o in pod.owner_references)
        return (pod.spec, pod.namespace, tuple(pod.labels.items()), tuple(pod.annotations.items()), owners,
                pod.priority, pod.preemption_policy, apply_preemption)

    def _full(self, pod: Pod, apply_preemption: bool) -> CycleResult:
        self.template = None
        result = self.fw.schedule(pod, self.cluster, assume=True, apply_preemption=apply_preemption, rank=False)
        # Pods nominated to nodes change a node's verdict per pod priority: no cached template then.
        if (result.outcome == SCHEDULED and self.usable and not self.fw.handle.nominated
                and not self.fw._pre_enqueue(pod, self.cluster)):
            self.template = self._warm(pod)  # over the table as it is after this placement
            if self.template is not None:
                self.template.fingerprint = self._fingerprint()
        return result

    def _warm(self, pod: Pod) -> _Template | None:
        """Runs the cached plugins' PreFilter, Filter, PreScore and Score over every node."""
        t = _Template(pod.spec, self._plan(pod))
        cluster = self.cluster
        for plugin in self.fw.points["preFilter"]:
            if plugin.name not in t.cached:
                continue
            state = t.states.setdefault(plugin.name, CycleState())
            status = plugin.pre_filter(state, pod, cluster) or Status()
            if status.is_skip:
                t.states[plugin.name] = None  # Filter skipped
                continue
            if status.is_rejected or status.code == Code.ERROR:
                return None
            if status.node_mask is not None:
                t.narrowed = status.node_mask if t.narrowed is None else t.narrowed & status.node_mask
        for plugin in self.fw.points["filter"]:
            if plugin.name not in t.cached:
                continue
            if plugin.name in t.states and t.states[plugin.name] is None:
                continue
            state = t.states.setdefault(plugin.name, CycleState())
            status = plugin.filter(state, pod, cluster)
            if (status.code == Code.ERROR).any():
                return None
            t.rejected[plugin.name] = status.rejected.copy()
        candidates = np.flatnonzero(self._cached_feasible(t))
        for plugin in self.fw.points["preScore"]:
            if plugin.name not in t.cached:
                continue
            state = t.states.get(plugin.name) or CycleState()
            t.states[plugin.name] = state
            status = plugin.pre_score(state, pod, cluster, candidates)
            if status is not None and status.is_skip:
                t.score_skipped.add(plugin.name)
            elif status is not None and not status.is_success:
                return None
        for plugin in self.fw.points["score"]:
            if plugin.name not in t.cached or plugin.name in t.score_skipped:
                continue
            state = t.states.get(plugin.name) or CycleState()
            t.states[plugin.name] = state
            raw = np.zeros(cluster.n, dtype=np.int64)
            raw[candidates] = np.asarray(plugin.score(state, pod, cluster, candidates), dtype=np.int64)
            t.raw[plugin.name] = raw
        t.feasible = self._cached_feasible(t)
        weights = self.fw.weights
        t.plain = [(p.name, weights[p.name]) for p, cached, normalizes, _ in t.scores
                   if cached and not normalizes and p.name in t.raw]
        t.normalized = [(p, weights[p.name]) for p, cached, normalizes, _ in t.scores
                        if cached and normalizes and p.name in t.raw]
        t.plain_total = np.zeros(cluster.n, dtype=np.int64)
        for name, weight in t.plain:
            raw = t.raw[name]
            if len(candidates) and (raw[candidates].min() < MIN_NODE_SCORE or raw[candidates].max() > MAX_NODE_SCORE):
                return None  # let the full path report the plugin's invalid score
            t.plain_total += raw * weight
        return t

    def _cached_feasible(self, t: _Template) -> np.ndarray:
        feasible = np.ones(self.cluster.n, dtype=bool) if t.narrowed is None else t.narrowed.copy()
        for rejected in t.rejected.values():
            feasible &= ~rejected
        return feasible

    def _row_plugins(self, t: _Template) -> tuple[list[str], list[str]]:
        filters = [n for n in t.rejected if n in ROW_PLUGINS]
        scores = [n for n in t.raw if n in ROW_PLUGINS]
        return filters, scores

    def _build_levels(self, pod: Pod, t: _Template) -> None:
        """Tabulates the leveled plugins' rows with 1..LEVELS more replicas, over all nodes at once."""
        filters, scores = self._row_plugins(t)
        if any(n not in LEVELED_PLUGINS for n in (*filters, *scores)):
            return
        cluster = self.cluster
        static = np.ones(cluster.n, dtype=bool) if t.narrowed is None else t.narrowed.copy()
        for name, rejected in t.rejected.items():
            if name not in ROW_PLUGINS:
                static &= ~rejected
        for m in range(1, self.LEVELS + 1):
            view = _plus_view(cluster, pod, m)
            feasible = static.copy()
            for name in filters:
                rejected = self.fw.plugins[name].filter(t.states[name], pod, view).rejected.copy()
                t.rejected_at.setdefault(name, []).append(rejected)
                feasible &= ~rejected
            candidates = np.flatnonzero(feasible)
            for name in scores:
                raw = np.zeros(cluster.n, dtype=np.int64)
                if len(candidates):
                    raw[candidates] = np.asarray(self.fw.plugins[name].score(t.states[name], pod, view, candidates),
                                                 dtype=np.int64)
                t.raw_at.setdefault(name, []).append(raw)
        t.level = np.zeros(cluster.n, dtype=np.int64)

    def _update_row(self, pod: Pod, t: _Template, i: int) -> None:
        """Brings the row-local plugins' filter result and raw score of node i up to date after a
        placement there, with the template's PreFilter/PreScore state (a request vector: the same
        for every node)."""
        if t.level is not None:
            level = int(t.level[i]) + 1
            t.level[i] = level
            if level <= self.LEVELS:
                for name, rows in t.rejected_at.items():
                    t.rejected[name][i] = rows[level - 1][i]
                for name, rows in t.raw_at.items():
                    t.raw[name][i] = rows[level - 1][i]
                self._row_sums(t, i)
                return
        filters, scores = self._row_plugins(t)
        view = None
        for name in filters:
            if view is None:
                view = row_view(self.cluster, i)
            t.rejected[name][i] = bool(self.fw.plugins[name].filter(t.states[name], pod, view).rejected[0])
        if self._cached_feasible_row(t, i):
            for name in scores:
                if view is None:
                    view = row_view(self.cluster, i)
                t.raw[name][i] = int(self.fw.plugins[name].score(t.states[name], pod, view, self._one)[0])
        self._row_sums(t, i)

    def _row_sums(self, t: _Template, i: int) -> None:
        feasible = self._cached_feasible_row(t, i)
        if feasible != t.feasible[i]:
            if feasible or not self._drop_from_base(t, i):
                t.base = None  # the candidate set changed: recomputed when next needed
        t.feasible[i] = feasible
        if not feasible:
            return
        total = 0
        for name, weight in t.plain:
            score = int(t.raw[name][i])
            if score < MIN_NODE_SCORE or score > MAX_NODE_SCORE:
                raise PluginError(f"plugin {name!r} returns an invalid score, it should be "
                                  f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
            total += score * weight
        t.plain_total[i] = total
        if t.base is not None:
            self._patch_base(t, i, total)

    def _base(self, pod: Pod, t: _Template) -> tuple[np.ndarray, ...]:
        """Returns (candidates, normalized, total, key, tiebreak) of the cached plugins alone,
        recomputed only when the candidate set changed (most placements change one row's sums)."""
        if t.base is None:
            candidates = np.flatnonzero(t.feasible)
            normalized = self._normalized_for(pod, t, candidates)
            total = t.plain_total[candidates] + normalized
            tiebreak = _tiebreak(self.cluster, candidates)
            t.base = (candidates, normalized, total, total * self.cluster.n + tiebreak, tiebreak)
            t.extremes = self._extremes(t, candidates)
        return t.base

    def _drop_from_base(self, t: _Template, i: int) -> bool:
        """Takes node i (no longer feasible) out of the base when that leaves every normalized
        plugin's scores as they are: each normalizes by the lowest and highest raw score of the
        candidates, and node i holds neither alone. Returns False when the base must be rebuilt."""
        if t.base is None or t.extremes is None:
            return False
        extremes = []
        for (plugin, _), (lo, n_lo, hi, n_hi) in zip(t.normalized, t.extremes):
            score = int(t.raw[plugin.name][i])
            n_lo, n_hi = n_lo - (score == lo), n_hi - (score == hi)
            if not n_lo or not n_hi:
                return False
            extremes.append((lo, n_lo, hi, n_hi))
        t.extremes = extremes
        pos = int(np.searchsorted(t.base[0], i))
        t.base = tuple(without(column, pos) for column in t.base)
        t.last_candidates, t.normalized_total = t.base[0], t.base[1]
        return True

    @staticmethod
    def _extremes(t: _Template, candidates: np.ndarray) -> list[tuple[int, int, int, int]] | None:
        """Each normalized plugin's lowest and highest raw score over the candidates, with how many
        candidates hold each; None unless every one declares that it normalizes by them alone."""
        if not len(candidates) or not all(getattr(p, "normalizes_by_extremes", False) for p, _ in t.normalized):
            return None
        extremes = []
        for plugin, _ in t.normalized:
            raw = t.raw[plugin.name][candidates]
            lo, hi = raw.min(), raw.max()
            extremes.append((int(lo), int(np.count_nonzero(raw == lo)), int(hi), int(np.count_nonzero(raw == hi))))
        return extremes

    def _patch_base(self, t: _Template, i: int, plain: int) -> None:
        """Brings the base's entry of node i (a candidate still) up to date with its plain sum."""
        candidates, normalized, total, key, tiebreak = t.base
        pos = int(np.searchsorted(candidates, i))
        total[pos] = plain + int(normalized[pos])
        key[pos] = int(total[pos]) * self.cluster.n + int(tiebreak[pos])

    def _normalized_for(self, pod: Pod, t: _Template, candidates: np.ndarray) -> np.ndarray:
        """The normalized static scores' sum over a candidate set, cached for the last set (their
        raw scores never change, so only the set matters)."""
        last = t.last_candidates
        if last is None or len(last) != len(candidates) or not np.array_equal(last, candidates):
            t.normalized_total = self._normalized_total(pod, t, candidates)
            t.last_candidates = candidates
        return t.normalized_total

    def _normalized_total(self, pod: Pod, t: _Template, candidates: np.ndarray) -> np.ndarray:
        total = np.zeros(len(candidates), dtype=np.int64)
        for plugin, weight in t.normalized:
            scores = np.asarray(plugin.normalize_score(t.states[plugin.name], pod, t.raw[plugin.name][candidates]),
                                dtype=np.int64)
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                raise PluginError(f"plugin {plugin.name!r} returns an invalid score, it should be "
                                  f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
            total += scores * weight
        return total

    def _cached_feasible_row(self, t: _Template, i: int) -> bool:
        if t.narrowed is not None and not t.narrowed[i]:
            return False
        return not any(r[i] for r in t.rejected.values())

    def _incremental(self, pod: Pod, t: _Template, apply_preemption: bool) -> CycleResult:
        fw, cluster = self.fw, self.cluster
        state = CycleState()
        mask = self._cycle_mask(state, pod, t)
        if mask is False:
            return self._full(pod, apply_preemption)
        if mask is None:  # no per-cycle filter narrowed the cached candidates
            candidates, _, base_total, key, _ = self._base(pod, t)
            total = base_total  # added to below, never changed in place
        else:
            candidates = np.flatnonzero(mask)
            total = t.plain_total[candidates] + self._normalized_for(pod, t, candidates)
            key = None
        if not len(candidates):
            return self._full(pod, apply_preemption)
        score_skipped = t.score_skipped
        for plugin in t.pre_scores:
            status = plugin.pre_score(state, pod, cluster, candidates)
            if status is not None and status.is_skip:
                score_skipped = score_skipped | {plugin.name}
            elif status is not None and not status.is_success:
                raise PluginError(f"running PreScore plugin {plugin.name!r}: {status.message}")
        for plugin, cached, normalizes, weight in t.scores:
            if cached or plugin.name in score_skipped:
                continue
            slots = _slot_scores(plugin, state, pod, cluster, candidates) if normalizes else None
            if slots is not None:  # a few per-slot values, added through one lookup each
                table, lookup = slots
                total = total + (table * weight).take(lookup)
                if key is not None:
                    key = key + (table * (weight * cluster.n)).take(lookup)
                continue
            scores = np.asarray(plugin.score(state, pod, cluster, candidates), dtype=np.int64)
            if normalizes:
                scores = np.asarray(plugin.normalize_score(state, pod, scores), dtype=np.int64)
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                raise PluginError(f"plugin {plugin.name!r} returns an invalid score, it should be "
                                  f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
            weighted = scores * weight
            total = total + weighted
            if key is not None:
                key = key + weighted * cluster.n
        best = _best(total, candidates, name_rank(cluster)) if key is None else int(key.argmax())
        if mask is None and total is base_total:
            total = total.copy()  # the base is patched in place by this placement's row update
        node = int(candidates[best])
        if fw.reserve(state, pod, cluster, node) is not None:
            return self._full(pod, apply_preemption)  # the full cycle reports the rejection (or raises)
        cluster.assume(pod, node)
        self._update_row(pod, t, node)
        t.fingerprint = self._fingerprint()
        t.cycles += 1
        if t.cycles == self.LEVELS_AFTER and t.level is None:
            self._build_levels(pod, t)
        return CycleResult(pod, fw.profile.scheduler_name, SCHEDULED, node, candidates=candidates, total=total,
                           ranking=np.array([best], dtype=np.intp), weights=self._weights,
                           not_simulated=fw.not_simulated)

    def _cycle_mask(self, state: CycleState, pod: Pod, t: _Template):
        """Runs the per-cycle PreFilter and Filter plugins: returns the feasible mask they leave,
        None when none narrowed the cached feasibility (all skipped), False to take the full path."""
        mask = None
        skipped: set[str] = set()
        for plugin in t.pre_filters:
            status = plugin.pre_filter(state, pod, self.cluster) or Status()
            if status.is_skip:
                skipped.add(plugin.name)
            elif not status.is_success:
                return False
            elif status.node_mask is not None:
                mask = (t.feasible if mask is None else mask) & status.node_mask
        for plugin in t.filters:
            if plugin.name in skipped:
                continue
            if mask is None:
                mask = t.feasible.copy()
            if not mask.any():
                break
            status = plugin.filter(state, pod, self.cluster)
            if (status.code == Code.ERROR).any():
                return False
            mask &= ~status.rejected
        return mask
