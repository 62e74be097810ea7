"""Replicas of one template, scheduled one after another: the incremental fast path.

ReplicaScheduler gives each replica the node Framework.schedule would, reusing what the replicas
of one template share (the template-and-node-only plugins' verdicts and scores, the row-local
plugins' rows but the one just placed on), and gives a replica the answer of the previous one
when that one failed on a table that has not changed since.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.api.storage import claim_names
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.arith import without
from kplan.framework.interfaces import CycleState, NormalizeScorePlugin
from kplan.framework.node_local import (
    LEVELED_PLUGINS, ROW_PLUGINS, STATIC_PLUGINS, STATIC_WITHOUT_POD_TERMS, row_view,
)
from kplan.framework.runtime import SCHEDULED, CycleResult, Framework
from kplan.framework.selection import (
    best_position, invalid_score, name_rank, name_tiebreak, out_of_range, slot_scores,
)
from kplan.framework.status import Code, Status


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
            if out_of_range(raw[candidates]):
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
            if out_of_range(np.array([score])):
                raise invalid_score(name)
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
            tiebreak = name_tiebreak(self.cluster, candidates)
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
            if out_of_range(scores):
                raise invalid_score(plugin.name)
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
            slots = slot_scores(plugin, state, pod, cluster, candidates) if normalizes else None
            if slots is not None:  # a few per-slot values, added through one lookup each
                table, lookup = slots
                total = total + (table * weight).take(lookup)
                if key is not None:
                    key = key + (table * (weight * cluster.n)).take(lookup)
                continue
            scores = np.asarray(plugin.score(state, pod, cluster, candidates), dtype=np.int64)
            if normalizes:
                scores = np.asarray(plugin.normalize_score(state, pod, scores), dtype=np.int64)
            if out_of_range(scores):
                raise invalid_score(plugin.name)
            weighted = scores * weight
            total = total + weighted
            if key is not None:
                key = key + weighted * cluster.n
        best = best_position(total, candidates, name_rank(cluster)) if key is None else int(key.argmax())
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
