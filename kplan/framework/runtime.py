"""The scheduling cycle: PreEnqueue, PreFilter, Filter, PreScore, Score, NormalizeScore, Reserve.

One Framework per profile, built from a Profile the way frameworkImpl is: plugins instantiated
once, MultiPoint expanded per extension point, score weights resolved. The choice among the
scored nodes is kplan.framework.selection's; replicas of one template take the incremental path of
kplan.framework.replicas.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from kplan.api.elastic_quota import KIND as EQ_KIND, load_quotas, quota_changes
from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import InputError, PluginError
from kplan.framework.config import Profile
from kplan.framework.interfaces import (
    EXTENSION_POINTS, CycleState, FilterPlugin, Handle, NormalizeScorePlugin, PostFilterResult,
)
from kplan.framework.node_filters import Diagnosis, filters_on_node_with, nominated_on
from kplan.framework.selection import best_position, invalid_score, name_rank, out_of_range, rank_candidates
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
                    narrowed = Status(node_mask=status.node_mask, reasons=(plugin.name,),
                                      node_names=status.node_names)
                else:
                    narrowed = Status(node_mask=narrowed.node_mask & status.node_mask,
                                      reasons=(*narrowed.reasons, plugin.name),
                                      node_names=narrowed.node_names & status.node_names)
                # Only names no plugin shares reject the pod here: names of nodes the cluster does
                # not have leave every node to Filter, marked as not satisfying the plugins.
                if not narrowed.node_names:
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
            result.filter_statuses[plugin.name] = status
            codes = status.code
            if not codes.any():  # every node passes (most plugins, most cycles): nothing to fold in
                continue
            if (codes == Code.ERROR).any() and (codes[alive] == Code.ERROR).any():
                raise status.error or PluginError(f"running Filter plugin {plugin.name!r}: {status.reasons}")
            hit = alive & (codes != Code.SUCCESS)
            failed[hit] = k
            alive &= ~hit
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
            if out_of_range(scores):
                raise invalid_score(plugin.name)
            result.scores[plugin.name] = scores
            total += scores * self.weights[plugin.name]
        result.total = total
        # Upstream picks randomly among the best; kplan breaks ties by node name.
        if rank:
            result.ranking = rank_candidates(total, candidates, cluster)
        else:
            result.ranking = np.array([best_position(total, candidates, name_rank(cluster))], dtype=np.intp)

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
