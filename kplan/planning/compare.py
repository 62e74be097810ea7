"""`kplan compare`: the same pods through two or more variants of the set-up.

A variant is a scheduler configuration (and profile), a release, and what-if node changes. The
snapshot is loaded once; each variant derives its own snapshot (node changes) and its own Planner
(node table). The variants place the pods in lockstep, pod by pod, each on its own table, so the
first pod of a workload whose node differs can be explained while both tables are as the two
schedulers saw them. With A the first variant's node and B the other's: per plugin, the margin of B
over A in weighted score (weight x normalized score) in each variant; the plugin whose margin grew
most from the first variant to the other decided it ("decidedBy"). A node one variant filtered out
is named with the Filter plugin that rejected it instead. Later pods of the workload see tables that already differ, so they are not explained.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, Callable, Sequence

import numpy as np

from kplan.errors import InputError
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED
from kplan.planning.check import failing_plugin

NOT_CREATED = "NotCreated"  # a pod (of a DaemonSet) that a variant's nodes do not ask for

# The flags a --variant may hold: flag -> (field, repeatable).
VARIANT_FLAGS = {"--config": ("config", False), "--profile": ("profile", False),
                 "--kube-version": ("kube_version", False), "--add-node": ("add_node", True),
                 "--remove-node": ("remove_node", True), "--cordon": ("cordon", True), "--drain": ("drain", True)}
SWITCHES = {"--force-drain": "force_drain"}  # variant flags that take no value


@dataclass
class Variant:
    name: str
    flags: str = ""
    config: str | None = None
    profile: str | None = None
    kube_version: str | None = None
    add_node: list[str] = field(default_factory=list)
    remove_node: list[str] = field(default_factory=list)
    cordon: list[str] = field(default_factory=list)
    drain: list[str] = field(default_factory=list)
    force_drain: bool = False


def parse_variant(spec: str) -> Variant:
    """Parses NAME=FLAGS (FLAGS split as a shell would); only VARIANT_FLAGS are accepted."""
    name, sep, flags = spec.partition("=")
    name = name.strip()
    if not sep or not name:
        raise InputError(f"--variant {spec!r}: expected NAME=FLAGS, e.g. 'packed=--config packed.yaml'")
    try:
        words = shlex.split(flags)
    except ValueError as err:
        raise InputError(f"--variant {name}: cannot split its flags: {err}") from None
    v = Variant(name, flags.strip())
    k = 0
    while k < len(words):
        word = words[k]
        if word in SWITCHES:
            setattr(v, SWITCHES[word], True)
            k += 1
            continue
        flag, eq, value = word.partition("=")
        if flag not in VARIANT_FLAGS:
            raise InputError(f"--variant {name}: {word!r} is not a variant flag "
                             f"(accepted: {', '.join([*VARIANT_FLAGS, *SWITCHES])})")
        if not eq:
            if k + 1 >= len(words):
                raise InputError(f"--variant {name}: {flag} needs a value")
            k += 1
            value = words[k]
        attr, repeatable = VARIANT_FLAGS[flag]
        if repeatable:
            getattr(v, attr).append(value)
        elif getattr(v, attr) is not None:
            raise InputError(f"--variant {name}: {flag} given twice")
        else:
            setattr(v, attr, value)
        k += 1
    if v.force_drain and not v.drain:
        raise InputError(f"--variant {name}: --force-drain goes with --drain")
    return v


def variants_from(specs: Sequence[str], configs: Sequence[str], kube_versions: Sequence[str]) -> list[Variant]:
    """The variants of the command line: --variant NAME=FLAGS, or the short forms (two or more --config,
    or two or more --kube-version; a single one of the other applies to every variant)."""
    if specs:
        if len(configs) > 1 or len(kube_versions) > 1:
            raise InputError("--variant excludes several --config or --kube-version: put them in the variants")
        variants = [parse_variant(s) for s in specs]
        for v in variants:  # a single --config/--kube-version is the default of every variant
            v.config = v.config or (configs[0] if configs else None)
            v.kube_version = v.kube_version or (kube_versions[0] if kube_versions else None)
    elif len(configs) > 1 and len(kube_versions) > 1:
        raise InputError("give several --config or several --kube-version, not both (or use --variant)")
    elif len(configs) > 1:
        version = kube_versions[0] if kube_versions else None
        variants = [Variant(os.path.basename(c), f"--config {shlex.quote(c)}", config=c, kube_version=version)
                    for c in configs]
    elif len(kube_versions) > 1:
        config = configs[0] if configs else None
        variants = [Variant(k, f"--kube-version {k}", config=config, kube_version=k) for k in kube_versions]
    else:
        raise InputError("nothing to compare: give two or more --variant NAME=FLAGS, --config or --kube-version")
    if len(variants) < 2:
        raise InputError("nothing to compare: give two or more variants")
    names = [v.name for v in variants]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"two variants are named {dup!r}")
    return variants


# -- the run --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placement:
    """Where one variant put one pod of a workload: the outcome and node (None without one); for a pod
    not scheduled, the plugin that failed it and the message (both None for a scheduled or not created
    pod); whether the preemption it needs was applied (--allow-preemption)."""

    workload: str
    outcome: str
    node: str | None
    plugin: str | None = None
    message: str | None = None
    applied: bool = False


@dataclass(frozen=True)
class Explanation:
    """Why `variant` put a pod on nodes[1] where `against` (the first variant) put it on nodes[0]: the plugin
    that decided it, and either the variant that filtered out the other's node or, per variant, each
    plugin's margin of nodes[1] over nodes[0] in weighted score."""

    variant: str
    against: str
    nodes: tuple[str, str]
    decided_by: str | None
    filtered: str | None = None
    margins: dict[str, dict[str, int]] | None = None


@dataclass
class ComparedPod:
    """One pod matched across the variants: its name (the first variant's), its workload, its placement in
    every variant (in the variants' order) and, for the first pod of a workload whose node differs, why."""

    pod: str
    workload: str
    placements: dict[str, Placement] = field(default_factory=dict)
    explanations: list[Explanation] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return len({(p.outcome, p.node) for p in self.placements.values()}) > 1


@dataclass
class Run:
    """One variant on its way: its planner, its node changes, its placements."""
    variant: Variant
    planner: Any
    changes: Any = None
    placements: list[Placement] = field(default_factory=list)


def _weighted_on(run: Run, nodes: Sequence[int]) -> list[dict[str, int] | str]:
    """Re-runs the cycle of the pod this run placed last (taken off its node first, put back after)
    and returns, per node of `nodes`, its per-plugin weighted scores, or the Filter plugin that
    rejected it."""
    planner, cluster = run.planner, run.planner.cluster
    node_of = cluster.index[run.placements[-1].node]
    bound = cluster.pods_by_node[node_of][-1]
    cluster.forget(bound, node_of)
    planner._invalidate()
    try:
        result = planner.framework_for(bound).schedule(bound, cluster, assume=False, apply_preemption=False,
                                                       rank=False, report=True, reserve=False)
    finally:
        cluster.assume(bound, node_of)
        planner._invalidate()
    out: list[dict[str, int] | str] = []
    for node in nodes:
        where = np.flatnonzero(result.candidates == node)
        if not len(where):
            out.append(result.reasons_of(node)[0] or "Filter")
            continue
        j = int(where[0])
        out.append({p: int(s[j]) * result.weights.get(p, 1) for p, s in result.scores.items()})
    return out


def explain(first: Run, other: Run, node_a: str, node_b: str) -> Explanation:
    """Why `other` put the pod on node_b where `first` put it on node_a: per plugin, the margin of
    node_b over node_a in weighted score, in each variant; the plugin whose margin grew most in the
    other variant decided it. A node one variant filtered out (or does not have) is named with the
    rejecting Filter plugin."""
    def scores(run: Run) -> list[dict[str, int] | str]:
        idx = run.planner.cluster.index
        if node_a not in idx or node_b not in idx:
            return ["NodeChanges" if n not in idx else {} for n in (node_a, node_b)]
        return _weighted_on(run, [idx[node_a], idx[node_b]])
    (a_on_a, a_on_b), (b_on_a, b_on_b) = scores(first), scores(other)
    which = (other.variant.name, first.variant.name, (node_a, node_b))  # variant, against, nodes
    if isinstance(a_on_b, str):  # the first variant filtered out the other's node
        return Explanation(*which, a_on_b, filtered=first.variant.name)
    if isinstance(b_on_a, str):  # the other variant filtered out the first's node
        return Explanation(*which, b_on_a, filtered=other.variant.name)
    plugins = sorted(set(a_on_a) | set(a_on_b) | set(b_on_a) | set(b_on_b))
    margin_a = {p: a_on_b.get(p, 0) - a_on_a.get(p, 0) for p in plugins}
    margin_b = {p: b_on_b.get(p, 0) - b_on_a.get(p, 0) for p in plugins}
    gain = {p: margin_b[p] - margin_a[p] for p in plugins}
    best = max(plugins, key=lambda p: (gain[p], p), default=None)
    return Explanation(*which, best if best is not None and gain[best] > 0 else None,
                       margins={first.variant.name: margin_a, other.variant.name: margin_b})


def _match_key(workload, pod) -> str:
    """What matches a pod across variants: its name; for a DaemonSet's pod, the node it is made for
    (its pods are one per node, and which node a name goes with depends on the variant's nodes)."""
    if workload.kind == "DaemonSet":
        terms = ((((pod.spec.get("affinity") or {}).get("nodeAffinity") or {})
                  .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
        for term in terms:
            for requirement in term.get("matchFields") or ():
                if requirement.get("key") == "metadata.name" and requirement.get("values"):
                    return f"node:{requirement['values'][0]}"
    return pod.key


def run_compare(runs: Sequence[Run], workloads_of: Callable[[Run], list], allow_preemption: bool = False,
                progress: Callable[[int], None] | None = None) -> list[ComparedPod]:
    """Places every workload's pods in every run, pod by pod (each run keeps its placements); returns the
    pods matched across the runs, each with its placement in every run and, for the first pod of a
    workload whose node differs, why (kplan.report.compare writes the ComparisonReport)."""
    pods_out: list[ComparedPod] = []
    first = runs[0]
    lists = [workloads_of(r) for r in runs]
    for group in zip(*lists):
        w = group[0]
        wname = f"{w.kind}/{w.namespace}/{w.name}"
        explained: set[str] = set()
        by_key: dict[str, ComparedPod] = {}  # the workload's pods by name, in order of first appearance
        # Each run places its own pods of the workload (a DaemonSet's depend on the run's nodes) in
        # order, pod k of every run in turn; pods are matched across runs by name.
        for pods in zip_longest(*(g.pods(r.planner.snapshot.nodes) for g, r in zip(group, runs))):
            for run, pod in zip(runs, pods):
                if pod is None:
                    continue
                result = run.planner.schedule(pod, apply_preemption=allow_preemption)
                node = run.planner.cluster.names[result.node] if result.node is not None else None
                scheduled = result.outcome == SCHEDULED
                place = Placement(wname, result.outcome, node, None if scheduled else failing_plugin(result),
                                  None if scheduled else result.message,
                                  allow_preemption and result.outcome == NEEDS_PREEMPTION)
                run.placements.append(place)
                entry = by_key.setdefault(_match_key(w, pod), ComparedPod(pod.key, wname))
                entry.placements[run.variant.name] = place
                if run is first:
                    entry.pod = pod.key  # the first variant's name for it
            if pods[0] is None:
                continue
            key = _match_key(w, pods[0])
            base = by_key[key].placements[first.variant.name]
            for run, pod in zip(runs[1:], pods[1:]):
                if pod is None or _match_key(w, pod) != key or run.variant.name in explained:
                    continue
                other = by_key[key].placements[run.variant.name]
                if other.node != base.node and base.outcome == other.outcome == SCHEDULED:
                    explained.add(run.variant.name)
                    by_key[key].explanations.append(explain(first, run, base.node, other.node))
            if progress:
                progress(1)
        for entry in by_key.values():
            places = entry.placements
            entry.placements = {run.variant.name: places.get(run.variant.name) or Placement(wname, NOT_CREATED, None)
                                for run in runs}
            pods_out.append(entry)
    return pods_out


def failed(runs: Sequence[Run], allow_preemption: bool) -> bool:
    """Exit 1: a variant did not place every pod (without preemption, unless allowed), or a drain left pods out."""
    for run in runs:
        for p in run.placements:
            if p.outcome not in (SCHEDULED, NEEDS_PREEMPTION) or (p.outcome == NEEDS_PREEMPTION
                                                                and not allow_preemption):
                return True
        if run.changes is not None and run.changes.failed:
            return True
    return False
