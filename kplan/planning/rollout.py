"""Updates of workloads the snapshot already runs, simulated as their controllers perform them.

A manifest naming a Deployment, StatefulSet or DaemonSet that the snapshot runs (same kind,
namespace and name) is an update: the workload's pods in the snapshot are the old revision, the
manifest's template is the new one, and the controller replaces the first by the second:

- Deployment, RollingUpdate (the deployment controller's rolling.go): the new ReplicaSet scales
  up while old and new pods together stay within replicas + maxSurge (reconcileNewReplicaSet,
  NewRSNewReplicas); old ReplicaSets, oldest first, scale down while the available pods stay at
  least replicas - maxUnavailable, their unavailable pods first (reconcileOldReplicaSets,
  cleanupUnhealthyReplicas, scaleDownOldReplicaSetsForRollingUpdate). maxSurge is rounded up,
  maxUnavailable down, and both at 0 make maxUnavailable 1 (ResolveFenceposts). A ReplicaSet
  deletes the pods getPodsToDelete ranks first: unscheduled, pending, not ready, lower
  pod-deletion-cost, more pods of the Deployment on the same node, newer.
- Deployment, Recreate (recreate.go): every old pod goes, then the new ReplicaSet scales up.
- StatefulSet (stateful_set_control.go): condemned ordinals (at or above replicas) go, missing
  ordinals are created lowest first (OrderedReady waits for each to run), then old pods are
  replaced from the highest ordinal down to `partition`, as many at once as maxUnavailable
  allows counting the replicas already unavailable (MaxUnavailableStatefulSet: on by default
  from 1.35; before, one at a time whatever the field says). OnDelete replaces nothing.
- DaemonSet (daemon/update.go): nodes without a daemon pod get one first (manage); then, with
  maxSurge 0, old pods go on at most maxUnavailable nodes at a time and new pods replace them;
  with maxSurge, a new pod starts beside the old one on up to maxSurge nodes, and the old one goes
  once the new one runs (both rounded up over the nodes that should run the daemon). OnDelete
  replaces nothing.

Every new pod is scheduled when it is created; one that does not fit stays pending and is tried
again after pods are deleted (the scheduling queue moves unschedulable pods back on a pod
deletion). A pod that runs is available at once: minReadySeconds, probes and termination grace
periods are not simulated, and an old pod counts as available unless its status says it is
pending or not ready. The rollout is done when the new template runs everywhere it should; it is
stuck when a controller step changes nothing, and the report says after which step, how many old
and new pods run then, and why the first pending new pod does not fit.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kplan.api.label_selectors import parse_selector
from kplan.api.objects import Pod
from kplan.api.update_strategies import daemon_set_strategy, deployment_strategy, stateful_set_strategy
from kplan.api.workloads import Workload, name_suffix
from kplan.framework import versions
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED, CycleResult

ROLLED_OUT = ("Deployment", "StatefulSet", "DaemonSet")
_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}  # podPhaseToOrdinal
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


# -- the snapshot's side: which workloads run, and their pods -------------------------------------

def available(pod: Pod) -> bool:
    """Whether an old pod counts as available: bound, and its status says neither pending nor unready."""
    if not pod.node_name or pod.phase not in ("", "Running"):
        return False
    ready = next((c for c in (pod.raw.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), None)
    return ready is None or ready.get("status") == "True"


def _active(pod: Pod) -> bool:
    """controller.IsPodActive: not finished and not being deleted."""
    return pod.phase not in ("Succeeded", "Failed") and not pod.terminating


def _controller_of(pod: Pod) -> tuple[str, str]:
    owner = next((o for o in pod.owner_references if o.get("controller")), None)
    return (owner.get("kind") or "", owner.get("name") or "") if owner else ("", "")


@dataclass
class Running:
    """The workloads a snapshot runs (its Deployments, DaemonSets and StatefulSets) and their active pods."""

    objects: dict[tuple[str, str, str], Any]
    pods: list[Pod]
    _owned: dict[tuple[str, str, str], list[Pod]] | None = None

    @classmethod
    def of(cls, snapshot) -> "Running":
        objects: dict[tuple[str, str, str], Any] = {
            (kind, (o.get("metadata") or {}).get("namespace") or "default", (o.get("metadata") or {}).get("name")): o
            for kind in ROLLED_OUT for o in snapshot.objects.get(kind, ())}
        return cls(objects, snapshot.pods)

    def runs(self, w: Workload) -> bool:
        return w.kind in ROLLED_OUT and (w.kind, w.namespace, w.name) in self.objects

    def owned(self, namespace: str, kind: str, name: str) -> list[Pod]:
        """The active pods whose controller is kind/name in the namespace (indexed on first use)."""
        if self._owned is None:
            self._owned = defaultdict(list)
            for pod in self.pods:
                if pod.owner_references and _active(pod):
                    self._owned[(pod.namespace, *_controller_of(pod))].append(pod)
        return self._owned.get((namespace, kind, name), [])

    def old_pods(self, w: Workload) -> list[Pod]:
        """The workload's pods in the snapshot: a Deployment's are the pods of ReplicaSets its selector
        selects, a StatefulSet's and a DaemonSet's the pods they control."""
        if w.kind != "Deployment":
            return self.owned(w.namespace, w.kind, w.name)
        obj = self.objects.get((w.kind, w.namespace, w.name)) or {}
        selector = parse_selector((obj.get("spec") or {}).get("selector") or ((w.obj or {}).get("spec") or {}).get(
            "selector"), w.source)
        self.owned(w.namespace, "", "")  # builds the index
        return [p for (ns, kind, _), pods in self._owned.items() if ns == w.namespace and kind == "ReplicaSet"
                for p in pods if selector.matches(p.labels)]


# -- one rollout ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One controller step: what it did, and how many old and new pods there are after it."""

    number: int
    action: str
    created: int
    deleted: int
    old_pods: int
    new_running: int
    new_pending: int


@dataclass(frozen=True)
class Settings:
    """The update strategy as the controller applied it (the fields its kind and type have, None otherwise)."""

    strategy: str
    pod_management: str | None = None  # StatefulSet
    partition: int | None = None  # StatefulSet, RollingUpdate
    max_surge: int | None = None
    max_unavailable: int | None = None


@dataclass(frozen=True)
class Stuck:
    """Where a rollout stopped short: after which step, and the old and new pods then."""

    after_step: int
    old_pods: int
    old_running: int
    new_running: int
    new_pending: int


@dataclass(frozen=True)
class RolloutOutcome:
    """What an update did: its strategy, the pods before and after, the steps, where it stuck (None when done)."""

    settings: Settings
    old_pods: int
    new_pods: int
    steps: list[Step]
    stuck: Stuck | None

    @property
    def done(self) -> bool:
        return self.stuck is None


@dataclass
class Rollout:
    """One workload's update in progress: the new pods created and where they run, the steps taken."""

    planner: Any
    old: Sequence[Pod]  # the workload's pods in the snapshot
    allow_preemption: bool
    progress: Callable[[int], None] | None = None
    copies: list[Pod] = field(default_factory=list)  # old-template pods a scaling event added
    created: list[Pod] = field(default_factory=list)
    pending: list[Pod] = field(default_factory=list)  # created, not running, in creation order
    where: dict[str, str] = field(default_factory=dict)  # new pod key -> node it runs on
    old_where: dict[str, str] = field(default_factory=dict)  # the same for old pods a scaling event added
    results: dict[str, CycleResult] = field(default_factory=dict)  # new pod key -> its last cycle
    steps: list[Step] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # keys of the old pods deleted
    _deleted: bool = False  # pods deleted since the pending ones were last tried

    def create(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            self.created.append(pod)
            if not self._schedule(pod, self.where):
                self.pending.append(pod)
            if self.progress:
                self.progress(1)

    def create_old(self, pods: Sequence[Pod]) -> None:
        """Pods of the old template, as a ReplicaSet scaled up by a scaling event creates them."""
        for pod in pods:
            self.copies.append(pod)
            self._schedule(pod, self.old_where)

    def _schedule(self, pod: Pod, where: dict[str, str]) -> bool:
        result = self.planner.schedule(pod, apply_preemption=self.allow_preemption)
        self.results[pod.key] = result
        if result.outcome == SCHEDULED or (self.allow_preemption and result.outcome == NEEDS_PREEMPTION):
            where[pod.key] = self.planner.cluster.names[result.node]
            return True
        return False

    def delete(self, pods: Sequence[Pod]) -> None:
        self.planner.delete(pods, self.old_where)
        self.gone.update(p.key for p in pods)
        self._deleted = True

    def old_left(self) -> list[Pod]:
        """The old pods not deleted yet (a scaling event's copies included)."""
        return [p for p in (*self.old, *self.copies) if p.key not in self.gone]

    def old_available(self, pod: Pod) -> bool:
        return pod.key in self.old_where if pod.key in self.results else available(pod)

    def retry(self) -> None:
        """The scheduling queue after a deletion: the pending new pods are tried again, in order."""
        if self._deleted and self.pending:
            self.pending = [pod for pod in self.pending if not self._schedule(pod, self.where)]
        self._deleted = False

    def runs(self, pod: Pod) -> bool:
        return pod.key in self.where

    def step(self, action: str, created: int, deleted: int, old: int) -> None:
        self.steps.append(Step(len(self.steps) + 1, action, created, deleted, old, len(self.where), len(self.pending)))


def _ranked_for_deletion(pods: Sequence[Pod], related_on_node: Counter) -> list[Pod]:
    """getPodsToDelete's order (ActivePodsWithRanks): unscheduled, pending, not ready, lower
    pod-deletion-cost, more related pods on the node, newer first; then by name."""
    def cost(pod: Pod) -> int:
        try:
            return int(pod.annotations.get(DELETION_COST, 0))
        except ValueError:
            return 0
    out = sorted(pods, key=lambda p: p.name)
    out.sort(key=lambda p: (p.raw.get("metadata") or {}).get("creationTimestamp") or "", reverse=True)
    out.sort(key=lambda p: (bool(p.node_name), _PHASE_ORDER.get(p.phase, 0), available(p), cost(p),
                            -related_on_node[p.node_name]))
    return out


# -- Deployment -------------------------------------------------------------------------------------

def _old_replica_sets(old: Sequence[Pod]) -> list[list[Pod]]:
    """The old pods by ReplicaSet, oldest ReplicaSet first (its first pod's creation time, then name)."""
    groups: dict[str, list[Pod]] = defaultdict(list)
    for pod in old:
        groups[_controller_of(pod)[1]].append(pod)
    def created(item) -> tuple[str, str]:
        name, pods = item
        return min((p.raw.get("metadata") or {}).get("creationTimestamp") or "" for p in pods), name
    return [pods for _, pods in sorted(groups.items(), key=created)]


def _scale_down(run: Rollout, groups: list[list[Pod]], count: int, pick: Callable[[Pod], bool]) -> list[Pod]:
    """Takes up to `count` pods that `pick` accepts from the ReplicaSets in order, each choosing by rank."""
    related = Counter(p.node_name for g in groups for p in g)
    related.update(run.where.values())
    related.update(run.old_where.values())
    gone: list[Pod] = []
    for group in groups:
        if len(gone) >= count:
            break
        chosen = [p for p in _ranked_for_deletion(group, related) if pick(p)][:count - len(gone)]
        gone += chosen
        group[:] = [p for p in group if p not in chosen]
    return gone


def _scaling_event(run: Rollout, groups: list[list[Pod]], wanted: int) -> None:
    """sync() before a rollout when the replicas change too: the old ReplicaSet (the largest, when several
    run) scales to the new count first, with copies of its pods or deleting its pods by rank."""
    if not groups or sum(len(g) for g in groups) == wanted:
        return
    group = max(groups, key=len)
    others = sum(len(g) for g in groups) - len(group)
    target = max(wanted - others, 0)
    if target > len(group):
        copies = [_copy(group[0], k) for k in range(target - len(group))]
        run.create_old(copies)
        group += copies
        run.step("scale old", 0, 0, sum(len(g) for g in groups))
    else:
        gone = _scale_down(run, [group], len(group) - target, lambda p: True)
        run.delete(gone)
        run.step("scale old", 0, len(gone), sum(len(g) for g in groups))


def _copy(pod: Pod, k: int) -> Pod:
    """A new pod of an old pod's ReplicaSet (its template is the old pod's spec), unbound."""
    rs = _controller_of(pod)[1]
    meta = {key: v for key, v in (pod.raw.get("metadata") or {}).items() if key not in ("uid", "creationTimestamp")}
    spec = {key: v for key, v in pod.spec.items() if key != "nodeName"}
    name = f"{rs}-{name_suffix(rs + '/scaled', k)}"
    copy = Pod({**pod.raw, "metadata": {**meta, "name": name}, "spec": spec, "status": {"phase": "Pending"}},
               pod.source)
    copy.priority, copy.preemption_policy = pod.priority, pod.preemption_policy
    return copy


def _rolling_deployment(run: Rollout, new: Sequence[Pod], old: Sequence[Pod], surge: int, unavailable: int) -> None:
    wanted = len(new)
    groups = _old_replica_sets(old)
    _scaling_event(run, groups, wanted)
    while True:
        run.retry()
        old_count = sum(len(g) for g in groups)
        new_count = len(run.created)
        if new_count < wanted and old_count + new_count < wanted + surge:
            up = min(wanted + surge - old_count - new_count, wanted - new_count)
            run.create(new[new_count:new_count + up])
            run.step("scale up", up, 0, old_count)
            continue
        if old_count == 0:
            return
        min_available = wanted - unavailable
        new_unavailable = new_count - len(run.where)
        most = old_count + new_count - min_available - new_unavailable
        if most <= 0:
            return
        gone = _scale_down(run, groups, most, lambda p: not run.old_available(p))
        available_now = sum(run.old_available(p) for g in groups for p in g) + len(run.where)
        if available_now > min_available:
            gone += _scale_down(run, groups, available_now - min_available, lambda p: True)
        if not gone:
            return
        run.delete(gone)
        run.step("scale down", 0, len(gone), old_count - len(gone))


def _recreate(run: Rollout, new: Sequence[Pod], old: Sequence[Pod]) -> None:
    if old:
        run.delete(old)
        run.step("scale down", 0, len(old), 0)
    run.create(new)
    run.step("scale up", len(new), 0, 0)


def _deployment(run: Rollout, w: Workload, new: Sequence[Pod], old: Sequence[Pod]) -> Settings:
    strategy = deployment_strategy((w.obj or {}).get("spec") or {})
    if strategy.type == "Recreate":
        _recreate(run, new, old)
        return Settings("Recreate")
    surge, unavailable = strategy.fenceposts(len(new))
    _rolling_deployment(run, new, old, surge, unavailable)
    return Settings("RollingUpdate", max_surge=surge, max_unavailable=unavailable)


# -- StatefulSet ------------------------------------------------------------------------------------

def _ordinal(pod: Pod, name: str) -> int | None:
    prefix, _, number = pod.name.rpartition("-")
    return int(number) if prefix == name and number.isdigit() else None


def _stateful_set(run: Rollout, w: Workload, new: Sequence[Pod], old: Sequence[Pod],
                  release) -> tuple[Settings, int]:
    strategy = stateful_set_strategy((w.obj or {}).get("spec") or {})
    wanted = len(new)
    slots: dict[int, Pod | None] = dict.fromkeys(range(wanted))
    condemned = []
    for pod in old:
        k = _ordinal(pod, w.name)
        if k is not None and k < wanted:
            slots[k] = pod
        else:
            condemned.append(pod)
    if condemned:
        run.delete(condemned)
        run.step("delete condemned", 0, len(condemned), len(run.old_left()))
    gate = versions.has(release, versions.STATEFUL_SET_MAX_UNAVAILABLE)
    most = strategy.unavailable(wanted) if gate else 1
    first = wanted if strategy.type == "OnDelete" else min(strategy.partition, wanted)
    ordered = strategy.pod_management == "OrderedReady"
    is_old = {id(p) for p in old}

    def healthy(k: int) -> bool:
        pod = slots[k]
        return pod is not None and (available(pod) if id(pod) in is_old else run.runs(pod))

    while True:
        run.retry()
        missing = [k for k in range(wanted) if slots[k] is None]
        if ordered:  # monotonic: only the lowest ordinal not running, once every one below it runs
            lowest = next((k for k in range(wanted) if not healthy(k)), None)
            missing = [lowest] if lowest is not None and slots[lowest] is None else []
        if missing:
            run.create([new[k] for k in missing])
            for k in missing:
                slots[k] = new[k]
            run.step("create", len(missing), 0, len(run.old_left()))
            continue
        if ordered and not all(healthy(k) for k in range(wanted)):
            break  # OrderedReady waits for every pod to run and be ready before it updates any
        counted = range(wanted) if gate else range(first, wanted)
        room = most - sum(not healthy(k) for k in counted)
        targets = [k for k in range(wanted - 1, first - 1, -1) if slots[k] is not None and id(slots[k]) in is_old]
        if room <= 0 or not targets:
            break
        gone = targets[:room]
        run.delete([slots[k] for k in gone])
        for k in gone:
            slots[k] = None
        run.step("delete for update", 0, len(gone), len(run.old_left()))
    rolling = strategy.type == "RollingUpdate"
    out = Settings(strategy.type, strategy.pod_management, strategy.partition if rolling else None,
                   max_unavailable=most if rolling else None)
    kept = sum(1 for k in range(first) if slots[k] is not None and id(slots[k]) in is_old)
    return out, kept  # old pods below the partition (every one with OnDelete) stay, as they should


# -- DaemonSet --------------------------------------------------------------------------------------

def target_node(pod: Pod) -> str:
    """util.GetTargetNodeName: the pod's nodeName, else the node its required affinity's
    `metadata.name In [node]` field selector names (how the DaemonSet controller pins its pods)."""
    if pod.node_name:
        return pod.node_name
    required = (((pod.spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for f in term.get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or ()) == 1:
                return f["values"][0]
    return ""


def _daemon_set(run: Rollout, w: Workload, new: Sequence[Pod], old: Sequence[Pod]) -> tuple[Settings, int]:
    strategy = daemon_set_strategy((w.obj or {}).get("spec") or {})
    new_on = {target_node(p): p for p in new}
    nodes = sorted(new_on)
    old_on: dict[str, Pod] = {}
    stale = []
    for pod in sorted(old, key=lambda p: p.name):
        node = target_node(pod)
        if node in new_on and node not in old_on:
            old_on[node] = pod
        else:  # a node that no longer runs the daemon, or a second pod on a node: manage deletes it
            stale.append(pod)
    if stale:
        run.delete(stale)
        run.step("delete", 0, len(stale), len(old_on))
    surge, unavailable = strategy.counts(len(nodes))
    started: set[str] = set()

    def old_available(node: str) -> bool:
        return node in old_on and available(old_on[node])

    def new_available(node: str) -> bool:
        return node in started and run.runs(new_on[node])

    while True:
        run.retry()
        empty = [n for n in nodes if n not in old_on and n not in started]
        if empty:  # manage: a daemon pod for every node that has none
            run.create([new_on[n] for n in empty])
            started.update(empty)
            run.step("create", len(empty), 0, len(old_on))
            continue
        if strategy.type == "OnDelete":
            break
        create, delete = (_surge_step(nodes, old_on, started, surge, old_available, new_available) if surge else
                          _unavailable_step(nodes, old_on, started, unavailable, old_available, new_available))
        if not create and not delete:
            break
        if delete:
            run.delete([old_on.pop(n) for n in delete])
        run.create([new_on[n] for n in create])
        started.update(create)
        run.step("update", len(create), len(delete), len(old_on))
    out = (Settings(strategy.type, max_surge=surge, max_unavailable=unavailable) if strategy.type == "RollingUpdate"
           else Settings(strategy.type))
    return out, len(old_on) if strategy.type == "OnDelete" else 0  # OnDelete keeps the old pods


def _unavailable_step(nodes, old_on, started, most, old_available, new_available) -> tuple[list[str], list[str]]:
    """rollingUpdate without surge: the old pods to delete (the next sync's manage replaces them)."""
    unavailable = 0
    replace, candidates = [], []
    for n in nodes:
        has_old, has_new = n in old_on, n in started
        if has_old == has_new:  # none (manage creates one) or both (manage deletes one): unavailable
            unavailable += 1
        elif has_new:
            unavailable += not new_available(n)
        elif not old_available(n):
            replace.append(n)
        elif unavailable < most:
            candidates.append(n)
    room = min(max(most - unavailable, 0), len(candidates))
    return [], replace + candidates[:room]


def _surge_step(nodes, old_on, started, most, old_available, new_available) -> tuple[list[str], list[str]]:
    """rollingUpdate with surge: new pods beside old ones, old pods whose new one runs go."""
    surging = 0
    allowed, candidates, delete = [], [], []
    for n in nodes:
        if n not in old_on:
            continue
        if n not in started:
            if not old_available(n):
                allowed.append(n)
            elif surging < most:
                candidates.append(n)
        elif not new_available(n):
            surging += 1
        else:
            delete.append(n)
    room = min(max(most - surging, 0), len(candidates))
    return allowed + candidates[:room], delete


# -- the outcome ------------------------------------------------------------------------------------

def run_rollout(planner, w: Workload, old: Sequence[Pod], new: Sequence[Pod], allow_preemption: bool,
                progress: Callable[[int], None] | None = None) -> tuple[Rollout, RolloutOutcome]:
    """Simulates the update of a workload the snapshot runs (`old`, its pods there) to the manifest's
    pods (`new`); returns the rollout (new pods, where they run, the pending ones) and its outcome."""
    run = Rollout(planner, old, allow_preemption, progress)
    if w.kind == "Deployment":
        settings, kept = _deployment(run, w, new, old), 0
    elif w.kind == "StatefulSet":
        settings, kept = _stateful_set(run, w, new, old, planner.handle.kube_version)
    else:
        settings, kept = _daemon_set(run, w, new, old)
    done = not run.pending and len(run.created) + kept == len(new)
    stuck = None if done else Stuck(len(run.steps), len(run.old_left()),
                                    sum(run.old_available(p) for p in run.old_left()), len(run.where),
                                    len(run.pending))
    return run, RolloutOutcome(settings, len(old), len(new), run.steps, stuck)
