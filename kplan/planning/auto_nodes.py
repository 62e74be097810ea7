"""`--add-node FILE:auto`: the smallest number of copies of node templates that lets every pod fit.

The search runs the whole simulation (check or capacity) at a count of added nodes, on the
snapshot loaded once, and asks whether every pod fit. Topology spread and pod affinity make
"fits" non-monotonic in the count, so the search does not bisect:

- a lower bound comes from resources: a first run without added nodes, and the requests of the
  pods it left unplaced (per resource, `pods` included) over the templates' allocatable, rounded up;
- then counts from it upward, galloping (lb, lb+1, lb+3, lb+7, …), and on the first success every
  count between the last failure and it, in order: the first that passes is the answer, and its
  run (a full simulation at that count) is the report.

Several templates are grown in the order given: the first up to --max-nodes copies, then the
second, and so on. Counts are positions in that order, so a count above --max-nodes means
every copy of the first template plus some of the second.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from kplan.errors import InputError

if TYPE_CHECKING:
    from kplan.planning.nearest.lack import Lack

AUTO = ":auto"
DEFAULT_MAX_NODES = 100


@dataclass
class Template:
    spec: str  # the --add-node argument
    path: str
    name: str  # the Node's metadata.name, which names its copies
    allocatable: Mapping[str, int]
    node: Any = None  # the Node itself


@dataclass
class Run:
    """One simulation at a count: what it returned (a CheckRun or CapacityRun; None for a check that only
    asked whether everything fits), whether every pod fit, the first failure's message, and the requests
    (per resource, pods counted) of the pods that did not fit."""

    result: Any
    passed: bool
    failure: str
    unplaced: Mapping[str, float]
    changes: Any = None  # the ChangeReport of the run's node changes, or None
    planner: Any = None  # the Planner after the run, for reports drawn from its node table
    unplaced_pods: Sequence = ()  # the pods that did not fit


def split_auto(add: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """Splits --add-node arguments into the fixed ones and the FILE:auto ones (their FILE)."""
    fixed, auto = [], []
    for spec in add or ():
        if spec.endswith(AUTO):
            path = spec[:-len(AUTO)]
            if not path:
                raise InputError(f"--add-node {spec!r}: FILE:auto needs a Node manifest before :auto")
            auto.append(path)
        else:
            fixed.append(spec)
    return fixed, auto


def load_templates(paths: Sequence[str]) -> list[Template]:
    """Reads and validates each template once (a missing file or one without exactly one Node: InputError)."""
    from kplan.api.objects import build
    from kplan.api.validation import validate_node
    from kplan.planning.node_changes import _node_template
    out = []
    for path in paths:
        raw, _, source = _node_template(path)
        validate_node(raw, source)
        name = (raw.get("metadata") or {}).get("name") or ""
        if not name:
            raise InputError("--add-node: the Node has no metadata.name", source)
        node = build("Node", raw, source)
        out.append(Template(f"{path}{AUTO}", path, name, node.allocatable, node))
    if len({t.name for t in out}) != len(out):
        raise InputError("--add-node FILE:auto: two templates name the same node "
                         f"({', '.join(t.name for t in out)}); their copies would clash")
    return out


def counts_at(position: int, templates: Sequence[Template], max_nodes: int) -> list[int]:
    """The copies of each template at a position of the growth order (the first filled up to max_nodes first)."""
    out = []
    for _ in templates:
        n = min(position, max_nodes)
        out.append(n)
        position -= n
    return out


def add_specs(templates: Sequence[Template], counts: Sequence[int]) -> list[str]:
    """The FILE:COUNT arguments that add these counts (named as --add-node FILE:COUNT names them)."""
    return [f"{t.path}:{n}" for t, n in zip(templates, counts) if n > 0]


def lower_bound(unplaced: Mapping[str, float], templates: Sequence[Template], max_nodes: int) -> int:
    """The position no smaller count can reach by resources alone: each template in turn covers what
    is still short (rounded up, at most max_nodes copies)."""
    short = {r: v for r, v in unplaced.items() if v > 0}
    position = 0
    for t in templates:
        if not short:
            break
        need = 0
        for r, v in short.items():
            have = t.allocatable.get(r, 0)
            need = max(need, max_nodes if have <= 0 else math.ceil(v / have))
        n = min(need, max_nodes)
        position += n
        short = {r: v - n * t.allocatable.get(r, 0) for r, v in short.items()}
        short = {r: v for r, v in short.items() if v > 0}
        if n < max_nodes:
            break
    return position


@dataclass(frozen=True)
class PodRefused:
    """A pod every template refuses on an empty copy: per template name, what rejects it there
    (the lacks of NODE_BOUND plugins)."""

    pod: str
    lacks: dict[str, list[Lack]]


@dataclass(frozen=True)
class EvictionRefused:
    """A drained pod whose eviction a PodDisruptionBudget refused: no count of nodes changes that."""

    pod: str
    reason: str


@dataclass(frozen=True)
class NotEnough:
    """Even max_nodes copies of every template leave a pod out: the first failure of that run."""

    max_nodes: int
    failure: str


@dataclass(frozen=True)
class NotVerified:
    """The full run at the count the search found did not pass: the count, and the run's first failure."""

    counts: list[int]
    failure: str


NoCount = PodRefused | EvictionRefused | NotEnough | NotVerified


@dataclass
class Answer:
    counts: list[int] | None  # None when even max_nodes of every template are not enough
    run: Run
    tried: list[int]  # positions simulated, in order (0 first)
    why_none: NoCount | None = None  # with counts None: why no count was found (None while searching)


def search(simulate: Callable[..., Run], templates: Sequence[Template], max_nodes: int) -> Answer:
    """Finds the smallest position of the growth order at which simulate passes (see the module doc).

    simulate(counts, full) runs the simulation; the search asks only whether it passed (full=False:
    a run may skip what only a report shows), and the answer is verified by a full run at its count,
    whose report is the answer's."""
    answer = _search(simulate, templates, max_nodes)
    if answer.counts is None and answer.why_none is not None:  # no count can help: the report is the run without copies
        answer.run = simulate(counts_at(0, templates, max_nodes), True)
        return answer
    counts = answer.counts if answer.counts is not None else [max_nodes] * len(templates)
    full = simulate(counts, True)
    if answer.counts is not None and not full.passed:  # cannot happen if the fast run is exact; say so
        return Answer(None, full, answer.tried, NotVerified(counts, full.failure))
    if answer.counts is None:
        answer.why_none = NotEnough(max_nodes, full.failure)
    answer.run = full
    return answer


def _search(simulate: Callable[..., Run], templates: Sequence[Template], max_nodes: int) -> Answer:
    top = max_nodes * len(templates)
    tried = [0]
    first = simulate(counts_at(0, templates, max_nodes), False)
    if first.passed:
        return Answer(counts_at(0, templates, max_nodes), first, tried)
    refused = refusal(first, templates)
    if refused is not None:
        return Answer(None, first, tried, refused)
    start = max(1, lower_bound(first.unplaced, templates, max_nodes))
    failed_below = 0
    step = 1
    position = min(start, top)
    last = first
    while True:
        tried.append(position)
        run = simulate(counts_at(position, templates, max_nodes), False)
        if run.passed:
            # Non-monotonic: a count between the last failure and this success may pass too.
            for p in range(max(failed_below + 1, start), position):
                tried.append(p)
                below = simulate(counts_at(p, templates, max_nodes), False)
                if below.passed:
                    return Answer(counts_at(p, templates, max_nodes), below, tried)
            return Answer(counts_at(position, templates, max_nodes), run, tried)
        failed_below, last = position, run
        if position >= top:
            break
        position = min(position + step, top)
        step *= 2
    return Answer(None, last, tried)


# Plugins whose verdict on a new, empty copy of a template reads only the pod, the node and the storage
# objects: when one rejects every template for a pod, no count of copies can hold it.
NODE_BOUND = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeDeclaredFeatures",
                        "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding", "VolumeZone"})


def refusal(run: Run, templates: Sequence[Template]) -> PodRefused | EvictionRefused | None:
    """Why no count of copies can help, when a pod that did not fit is refused by every template on
    grounds of the pod and the node alone (a volume in another zone, a taint, a node selector, a
    request larger than the template), or a drain's eviction was refused: None when copies may help."""
    from kplan.api.objects import Pod
    if run.changes is not None and run.changes.blocked:  # a PodDisruptionBudget does not count nodes
        key, entry = next(iter(run.changes.blocked.items()))
        return EvictionRefused(key, entry["reason"])
    if run.planner is None:
        return None
    seen: set[int] = set()
    for pod in run.unplaced_pods:
        if not isinstance(pod, Pod) or id(pod.spec) in seen:
            continue
        seen.add(id(pod.spec))
        lacks = {t.name: _refused_by(run.planner, pod, t) for t in templates}
        if all(lacks.values()):
            return PodRefused(pod.key, lacks)
    return None


def _refused_by(planner, pod, template: Template) -> list[Lack]:
    """What rejects the pod on an empty copy of the template, among NODE_BOUND (empty for nothing)."""
    from kplan.cluster.state import ClusterState
    from kplan.cluster.volumes import VolumeState
    from kplan.planning.nearest.nodes import lacks_of
    from kplan.planning.nearest.verdicts import analyze
    cluster = ClusterState([template.node], [])
    cluster.volumes = VolumeState(planner.snapshot.storage, cluster)
    cluster.volumes.assumed_claim_refs = dict(planner.cluster.volumes.assumed_claim_refs)
    cluster.volumes.assumed_selected = dict(planner.cluster.volumes.assumed_selected)
    verdicts = analyze(planner.framework_for(pod), pod, cluster)
    return [lack for lack in lacks_of(verdicts, 0) if lack.plugin in NODE_BOUND]


def unplaced_requests(pods: Sequence) -> dict[str, float]:
    """Per resource, the requests of these pods, with `pods` counting each one."""
    total: dict[str, float] = {"pods": float(len(pods))}
    for pod in pods:
        for r, v in pod.requests.items():
            total[r] = total.get(r, 0) + v
    return total


# -- the simulations -----------------------------------------------------------------------------

def _first_failure(run, changes) -> str:
    for w in run.workloads:
        f = w.first_failure
        if f is not None:
            return f"pod {f.pod.key}: {f.result.message or f.result.outcome}"
    return changes.first_failure() if changes is not None else ""


def _fast_check(planner, workloads, allow_preemption: bool, report_changes, rollout: bool = True) -> Run:
    """Whether every pod fits, and the requests of those that do not, without a report: a pod that is
    unschedulable leaves the table as it was, so the next pod of the same workload with the same spec
    and labels is unschedulable too, and is counted without its cycle (and its preemption dry run).
    A workload the snapshot runs is rolled out (kplan.planning.rollout): its pending new pods, and
    those a stuck rollout never created, do not fit."""
    from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED
    from kplan.planning.rollout import Running, run_rollout
    missing: list = []
    failure = ""
    running = Running.of(planner.snapshot) if rollout else None
    for w in workloads:
        if running is not None and running.runs(w):
            pods = w.pods(planner.snapshot.nodes)
            run, outcome = run_rollout(planner, w, running.old_pods(w), pods, allow_preemption)
            if not outcome.done:
                # Old pods go as new ones come: only the pod the rollout is stuck on surely needs room
                # from added nodes (counting every new pod would raise the search's lower bound).
                missing += [p for p in pods if not run.runs(p)][:1]
                failure = failure or f"{w.key}: rollout stuck at {len(run.where)} of {len(pods)} new pods"
            continue
        last = None  # (spec, labels) of the workload's last pod, when it was unschedulable
        for pod in w.pods(planner.snapshot.nodes):
            spec = pod.raw.get("spec")
            if last is not None and last == (spec, pod.labels):
                missing.append(pod)
                continue
            result = planner.schedule(pod, apply_preemption=allow_preemption)
            if result.outcome == SCHEDULED or (allow_preemption and result.outcome == NEEDS_PREEMPTION):
                last = None
                continue
            missing.append(pod)
            failure = failure or f"pod {pod.key}: {result.message or result.outcome}"
            last = (spec, dict(pod.labels)) if result.outcome != NEEDS_PREEMPTION else None
    drained_ok = True
    if report_changes is not None and report_changes.failed:
        missing += [p for p in report_changes.evicted if p.key in report_changes.unplaced]
        failure = failure or report_changes.first_failure()
        drained_ok = False
    return Run(None, not missing and drained_ok, failure, unplaced_requests(missing) if missing else {},
               report_changes, planner, missing)


@dataclass
class Scenario:
    """What a what-if simulation starts from: the snapshot, the manifests whose objects join it, the
    node changes other than added nodes (--remove-node, --cordon, --drain, --force-drain), and the
    scheduler settings."""

    snapshot: Any
    manifests: Any
    remove: Sequence[str] | None = None
    cordon: Sequence[str] | None = None
    drain: Sequence[str] | None = None
    force_drain: bool = False  # --force-drain: evictions do not ask the PodDisruptionBudgets
    profiles: Any = None
    profile: str | None = None
    kube_version: str | None = None
    now: Any = None

    def planner(self, add: Sequence[str]):
        """The planner of one simulation: the snapshot with nodes added from the --add-node specs `add`
        and the other node changes, the manifests' objects applied; and its ChangeReport (None without
        changes)."""
        from kplan.planning.node_changes import NodeChanges, what_if
        from kplan.planning.place import Planner
        changes = NodeChanges(add, self.remove or (), self.cordon or (), self.drain or (), self.force_drain)
        snap, report_changes = what_if(self.snapshot, changes, self.profiles, self.profile, self.kube_version,
                                       self.now) if changes else (self.snapshot, None)
        planner = Planner(self.manifests.applied_to(snap), self.profiles, self.profile,
                          kube_version=self.kube_version, now=self.now)
        return planner, report_changes


def check_simulator(scenario: Scenario, fixed: Sequence[str], templates: Sequence[Template], allow_preemption: bool,
                    rollout: bool = True):
    """Returns simulate(counts) -> Run for `kplan check` at those counts of added nodes (`rollout`: as
    run_check's)."""
    from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED
    from kplan.planning.check import run_check
    manifests = scenario.manifests

    def simulate(counts: list[int], full: bool = True):
        planner, report_changes = scenario.planner([*fixed, *add_specs(templates, counts)])
        if not full:
            return _fast_check(planner, manifests.workloads, allow_preemption, report_changes, rollout)
        run = run_check(planner, manifests.workloads, allow_preemption, rollout=rollout)
        passed = not run.failed and not (report_changes is not None and report_changes.failed)
        unplaced: dict[str, float] = {}
        if not passed:
            ok = {SCHEDULED, NEEDS_PREEMPTION} if allow_preemption else {SCHEDULED}
            placed = {p.pod for p in run.placements if p.outcome in ok}
            missing = {p.key for w in manifests.workloads for p in w.pods(planner.snapshot.nodes)} - placed
            pods = [p for w in manifests.workloads for p in w.pods(planner.snapshot.nodes) if p.key in missing]
            if report_changes is not None:
                pods += [p for p in report_changes.evicted if p.key in report_changes.unplaced]
            unplaced = unplaced_requests(pods)
        else:
            pods = []
        return Run(run, passed, _first_failure(run, report_changes), unplaced, report_changes, planner, pods)

    return simulate


def capacity_simulator(scenario: Scenario, pod, replicas: int, fixed: Sequence[str], templates: Sequence[Template],
                       allow_preemption: bool = False):
    """Returns simulate(counts) -> Run for `kplan capacity --replicas N` at those counts (replicas that fit
    by preempting count with `allow_preemption`)."""
    from kplan.planning.check import run_capacity

    def simulate(counts: list[int], full: bool = True):
        planner, report_changes = scenario.planner([*fixed, *add_specs(templates, counts)])
        run = run_capacity(planner, pod, replicas, wanted=True, allow_preemption=allow_preemption)
        drained_ok = not (report_changes is not None and report_changes.failed)
        passed = run.replicas >= replicas and drained_ok
        failure = ""
        unplaced: dict[str, float] = {}
        unplaced_pods: list = []
        if not passed:
            missing = replicas - run.replicas
            if missing:
                failure = f"replica {run.replicas + 1} of {pod.key}: {run.stop_reason}"
                one = unplaced_requests([pod])
                unplaced = {r: v * missing for r, v in one.items()}
                unplaced_pods = [pod]
            else:
                failure = report_changes.first_failure()
                unplaced = unplaced_requests([p for p in report_changes.evicted if p.key in report_changes.unplaced])
        return Run(run, passed, failure, unplaced, report_changes, planner, unplaced_pods)

    return simulate
