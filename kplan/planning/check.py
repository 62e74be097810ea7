"""`kplan check` and `kplan capacity`: many replicas through the scheduling cycle, without per-pod reports.

Both place pods with Planner.schedule (no ranking, no node dicts), so the per-replica cost is
the scheduling cycle alone. They return what happened (CheckRun, CapacityRun); kplan.report.check
writes the CheckReport and the CapacityReport from it, and kplan.report.ci the JUnit XML and the
GitHub workflow commands.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Sequence

from kplan.api.objects import Pod, build
from kplan.api.storage import uses_claims
from kplan.cluster.volumes import claim_facts
from kplan.api.workloads import Workload, manifest_pod, with_claim_volumes
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED, UNSCHEDULABLE, CycleResult
from kplan.planning.rollout import RolloutOutcome, Running, run_rollout
from kplan.planning.victims import Eviction, evictions

ZONE_LABEL = "topology.kubernetes.io/zone"
NO_ZONE = "<none>"
Progress = Callable[[int], None]


def failing_plugin(result: CycleResult) -> str:
    """Returns the plugin behind a failure: the PreFilter/PreEnqueue plugin that rejected the pod,
    else the Filter plugin that rejected the most nodes."""
    if result.prefilter_status is not None and result.prefilter_status.plugin:
        return result.prefilter_status.plugin
    if result.outcome == NEEDS_PREEMPTION and result.post_filter is not None:
        return result.post_filter.plugin
    if result.failed_plugin is not None and result.filter_plugins:
        counts = Counter(int(k) for k in result.failed_plugin.tolist() if k >= 0)
        if counts:
            return result.filter_plugins[counts.most_common(1)[0][0]]
    return "kube-scheduler"


# -- check ---------------------------------------------------------------------------------------

@dataclass
class FirstFailure:
    """The first pod of a workload that did not fit: its cycle's result and the plugin behind it, its
    claims' facts when it has any, and for an unschedulable pod the nearest nodes and hints of the
    nearest-nodes analysis (over the table as its cycle saw it)."""

    pod: Pod
    result: CycleResult
    plugin: str
    claims: list | None = None
    nearest: list | None = None
    hints: list | None = None


@dataclass
class Placed:
    """One pod of a check (by key): its workload, its cycle's outcome and message, its node's name (None
    without one), and the pods its preemption evicted (None without --allow-preemption or when it
    evicted none)."""

    pod: str
    workload: Workload
    outcome: str
    node: str | None
    message: str
    victims: list[str] | None = None


@dataclass
class WorkloadRun:
    """One workload of a check: its pods' outcomes counted, the nodes they went to, the first failure, the
    rollout of a workload the snapshot runs (kplan.planning.rollout's outcome, None otherwise) and, with
    --allow-preemption, the pods its preemptions evicted."""

    workload: Workload
    wanted: int
    placed: int = 0
    needs_preemption: int = 0
    unschedulable: int = 0
    nodes: Counter = field(default_factory=Counter)
    first_failure: FirstFailure | None = None
    rollout: RolloutOutcome | None = None
    evicted: list[Eviction] | None = None

    @property
    def passed(self) -> bool:
        return self.first_failure is None and (self.rollout is None or self.rollout.done)


@dataclass
class CheckRun:
    """What a check did: the planner's release fields, every workload, every pod in order."""

    release: dict[str, Any]
    allow_preemption: bool
    workloads: list[WorkloadRun]
    placements: list[Placed]

    @property
    def failed(self) -> int:
        return sum(not w.passed for w in self.workloads)


def first_failure(planner, pod: Pod, result: CycleResult) -> FirstFailure:
    """The first failure of a workload, analysed while the table is as its cycle saw it."""
    from kplan.planning.pending import what_would_make_it_fit
    failure = FirstFailure(pod, result, failing_plugin(result))
    if uses_claims(pod.spec):
        failure.claims = claim_facts(result.pod, planner.cluster.volumes)
    if result.outcome == UNSCHEDULABLE:
        failure.nearest, failure.hints = what_would_make_it_fit(planner, result)
    return failure


def run_check(planner, workloads: Sequence[Workload], allow_preemption: bool = False,
              progress: Progress | None = None, first_pod: Callable[[Pod], None] | None = None,
              rollout: bool = True) -> CheckRun:
    """Simulates every workload's pods in order. `first_pod` is called with each workload's first pod
    just before it is scheduled (a report previews it there). With `rollout`, a Deployment, StatefulSet
    or DaemonSet the snapshot runs is updated as its controller would (kplan.planning.rollout);
    otherwise every workload is created beside what runs. With `allow_preemption`, each workload keeps
    the pods its preemptions evicted, and so does each placement that preempted."""
    runs: list[WorkloadRun] = []
    placements: list[Placed] = []
    nodes = planner.snapshot.nodes
    running = Running.of(planner.snapshot) if rollout else None
    for w in workloads:
        pods = w.pods(nodes)
        wrun = WorkloadRun(w, len(pods))
        if pods and first_pod is not None:
            first_pod(pods[0])
        record = partial(_record, planner, wrun, placements, allow_preemption)
        first_eviction, first_placement = len(planner.evictions), len(placements)
        if running is not None and running.runs(w):
            _roll_out(planner, wrun, pods, running.old_pods(w), record, allow_preemption, progress)
        else:
            for pod in pods:
                record(pod, planner.schedule(pod, apply_preemption=allow_preemption))
                if progress:
                    progress(1)
        if allow_preemption:
            _victims(wrun, placements[first_placement:], planner.evictions[first_eviction:])
        runs.append(wrun)
    return CheckRun(planner.release_fields(), allow_preemption, runs, placements)


def _record(planner, wrun: WorkloadRun, placements: list[Placed], allow_preemption: bool, pod: Pod,
            result: CycleResult) -> None:
    """Counts one pod's outcome into its workload's run (where it went, the first failure) and the placements."""
    node = planner.cluster.names[result.node] if result.node is not None else None
    placements.append(Placed(pod.key, wrun.workload, result.outcome, node, result.message))
    if result.outcome == SCHEDULED:
        wrun.placed += 1
        wrun.nodes[node] += 1
    else:
        if result.outcome == NEEDS_PREEMPTION:
            wrun.needs_preemption += 1
            if allow_preemption:
                wrun.nodes[node] += 1
        else:
            wrun.unschedulable += 1
        if wrun.first_failure is None and not (result.outcome == NEEDS_PREEMPTION and allow_preemption):
            wrun.first_failure = first_failure(planner, pod, result)


def _victims(wrun: WorkloadRun, placements: list[Placed], evicted: Sequence[Eviction]) -> None:
    """A workload's victims: in its run, and by name in each of its placements that evicted pods."""
    wrun.evicted = list(evicted)
    by_preemptor: dict[str, list[str]] = {}
    for e in evicted:
        by_preemptor.setdefault(e.preemptor, []).append(e.victim.key)
    for p in placements:
        if p.pod in by_preemptor:
            p.victims = by_preemptor[p.pod]


def _roll_out(planner, wrun: WorkloadRun, pods: list[Pod], old: list[Pod],
              record: Callable[[Pod, CycleResult], None], allow_preemption: bool, progress: Progress | None) -> None:
    """The update of a workload the snapshot runs: the new pods' final outcomes, and its rollout (see
    kplan.planning.rollout)."""
    run, wrun.rollout = run_rollout(planner, wrun.workload, old, pods, allow_preemption, progress)
    for pod in run.created:
        record(pod, run.results[pod.key])


# -- capacity ------------------------------------------------------------------------------------

def replicas(template: Pod, limit: int | None) -> Iterable[Pod]:
    """Yields copies of the pod named <name>-1, <name>-2, ... sharing its spec (read-only); a pod of
    a StatefulSet with claim templates gets claims of its own (<template>-<name>-k), as a new
    ordinal would."""
    raw = template.raw
    meta = raw.get("metadata") or {}
    claims = template.claim_templates
    k = 0
    while limit is None or k < limit:
        k += 1
        name = f"{template.name}-{k}"
        spec = with_claim_volumes(raw["spec"], claims, name) if claims else raw["spec"]
        pod = build("Pod", {**raw, "metadata": {**meta, "name": name}, "spec": spec}, template.source)
        yield manifest_pod(pod, claims) if claims is not None else pod


@dataclass
class WithPreemption:
    """What preemption would add to a count that stopped without it: `more` replicas (exactly that many
    when `exact`), and for the replica that stopped the count, its node and the pods it would evict."""

    more: int
    exact: bool
    replica: str | None = None
    node: str | None = None
    evicted: list[Eviction] | None = None


@dataclass
class CapacityRun:
    """What a capacity count did: the replicas placed (`free` of them before the first preemption,
    `preempting` of them evicting pods themselves), why and how it stopped, where they went (node and
    zone names), and the pods evicted (with --allow-preemption) or what preemption would add (without)."""

    release: dict[str, Any]
    pod: str
    allow_preemption: bool
    replicas: int
    free: int
    preempting: int
    stop_reason: str
    stop_outcome: str
    max: int | None
    per_node: dict[str, int]
    per_zone: dict[str, int]
    evicted: list[Eviction] | None = None
    with_preemption: WithPreemption | None = None


def run_capacity(planner, template: Pod, max_replicas: int | None = None, progress: Progress | None = None,
                 wanted: bool = False, allow_preemption: bool = False) -> CapacityRun:
    """Places copies of the pod until one does not fit (or --max). With `wanted`, max_replicas is what
    --replicas asks for, not a --max.

    With `allow_preemption`, a copy that fits only by preempting evicts its victims, lands on its
    nominated node and the count goes on, later copies seeing the evictions: it stops at the first copy
    that fits nowhere even with preemption. Without, that copy stops the count, and `with_preemption`
    says how many more preemption would let fit as far as this run knows it.
    """
    per_node: Counter = Counter()
    first_eviction = len(planner.evictions)
    stop, outcome, count = "", "", 0
    free: int | None = None  # copies placed before the first preemption
    preempting = 0
    last: CycleResult | None = None
    for pod in replicas(template, max_replicas):
        last = result = planner.schedule(pod, apply_preemption=allow_preemption)
        preempted = allow_preemption and result.outcome == NEEDS_PREEMPTION
        if result.outcome != SCHEDULED and not preempted:
            outcome, stop = result.outcome, result.message or result.outcome
            if result.outcome == NEEDS_PREEMPTION:
                stop = (f"{stop} (the next replica fits only by preempting pods on "
                        f"{planner.cluster.names[result.node]}; preemption does not count as fitting)")
            break
        if preempted:
            free = count if free is None else free
            preempting += 1
        count += 1
        per_node[result.node] += 1
        if progress:
            progress(1)
    else:
        stop = f"all {max_replicas} replica(s) asked for fit" if wanted else f"reached --max {max_replicas}"
        outcome = "Replicas" if wanted else "Max"
    free = count if free is None else free
    names = planner.cluster.names
    return CapacityRun(planner.release_fields(), template.key, allow_preemption, count, free, preempting, stop,
                       outcome, None if wanted else max_replicas,
                       {names[i]: c for i, c in sorted(per_node.items(), key=lambda kv: names[kv[0]])},
                       _per_zone(planner.cluster, per_node),
                       list(planner.evictions[first_eviction:]) if allow_preemption else None,
                       None if allow_preemption else _with_preemption(planner, last, count, max_replicas))


def _per_zone(cluster, per_node: Counter) -> dict[str, int]:
    zones = cluster.label_column(ZONE_LABEL)
    per_zone: Counter = Counter()
    for i, c in per_node.items():
        code = int(zones.codes[i])
        per_zone[zones.values[code] if code >= 0 else NO_ZONE] += c
    return dict(sorted(per_zone.items()))


def _with_preemption(planner, last: CycleResult | None, count: int, limit: int | None) -> WithPreemption:
    """What preemption would add to a count that stopped without it: nothing, unless the copy that stopped
    it fits by preempting. Then at least that copy, which would evict the victims given; exactly it when
    it was the last copy asked for (the run knows no more without preempting)."""
    if last is None or last.outcome != NEEDS_PREEMPTION:
        return WithPreemption(0, True)
    return WithPreemption(1, limit is not None and count + 1 >= limit, last.pod.key,
                          planner.cluster.names[last.node], evictions(last, planner.cluster))
