"""What would make it fit: the nearest nodes of a pod no node accepts, what each lacks, and hints.

`analyze` runs every PreFilter and Filter plugin of the pod's profile over every node, without
kube-scheduler's short-circuits (the framework stops at a node's first failing Filter, and stops
filtering once no node is left), so every plugin's verdict on every node is known. The facts
behind each verdict come from the plugins' own cycle state and results: the request vector
NodeResourcesFit compared, the topology counts PodTopologySpread and InterPodAffinity computed in
PreFilter, the pod's host ports NodePorts kept. Everything over all nodes is numpy; Python work per
node is done only for the nodes a caller asks about (`lacks_of`, `nearest_nodes`) and per group of
nodes (a taint set, a topology constraint) for the hints.

Nothing here changes the node table; nothing prints.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from kplan.api.node_selectors import (
    NAME_FIELD, describe_requirement, is_empty_term, node_selector_terms_mask, requirement_mask,
)
from kplan.api.objects import Pod, Taint
from kplan.api.resources import PODS, format_amount, readable_amount
from kplan.cluster.pod_index import REQUIRED_ANTI_AFFINITY, PodIndex
from kplan.cluster.state import ClusterState
from kplan.errors import PluginError
from kplan.framework.interfaces import CycleState
from kplan.framework.runtime import run_pre_filter
from kplan.framework.status import CODE_NAMES, Code, NodeStatus, Status
from kplan.planning.volume_hints import volume_hints
from kplan.plugins import (
    dynamic_resources, inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit,
    node_unschedulable, node_volume_limits, pod_topology_spread, taint_toleration, volume_binding, volume_restrictions,
    volume_zone,
)

RESOURCE = "resource"
TAINT = "taint"
NODE_AFFINITY = "node-affinity"
NODE_SELECTOR = "node-selector"
TOPOLOGY_SPREAD = "topology-spread"
POD_AFFINITY = "pod-affinity"
POD_ANTI_AFFINITY = "pod-anti-affinity"
EXISTING_ANTI_AFFINITY = "existing-anti-affinity"
HOST_PORT = "host-port"
UNSCHEDULABLE = "unschedulable"
NODE_NAME = "node-name"
DEVICES = "devices"

FIT = node_resources_fit.NAME
TAINTS = taint_toleration.NAME
AFFINITY = node_affinity.NAME
PORTS = node_ports.NAME
SPREAD = pod_topology_spread.NAME
POD_TERMS = inter_pod_affinity.NAME
CORDON = node_unschedulable.NAME
NAMED = node_name.NAME

VOLUME_PLUGINS = (volume_restrictions.NAME, node_volume_limits.NAME, volume_binding.NAME, volume_zone.NAME)
MAX_NAMED = 3  # pods or nodes a line names before "and N more"
MAX_DETAIL_PODS = 20  # pods a lack's detail lists (its count says how many there are)


@dataclass
class Lack:
    """One thing a node lacks, for one filter plugin (a plugin may have several kinds, as
    InterPodAffinity's anti-affinity and an existing pod's anti-affinity)."""

    plugin: str  # upstream plugin name, e.g. "NodeResourcesFit"
    kind: str  # RESOURCE, TAINT, ... or the plugin's name in kebab case for other plugins
    text: str  # one readable line: "300m cpu and 1.5Gi memory short"
    detail: dict[str, Any] = field(default_factory=dict)  # machine-readable facts (JSON values only)


@dataclass
class NearNode:
    """A rejected node and everything that rejects it, in profile order."""

    node: str
    lacks: list[Lack]

    @property
    def plugins(self) -> list[str]:
        """The plugins that reject the node, each once, in the order of its lacks."""
        return list(dict.fromkeys(lack.plugin for lack in self.lacks))


@dataclass
class Verdicts:
    """Every PreFilter and Filter plugin's verdict on every node for one pod.

    `plugins` names the columns of `rejected` in profile order: plugins whose PreFilter rejected the
    pod outright (their column is all True), then the Filter plugins and the PreFilter plugins that
    narrowed the nodes (a node outside a PreFilterResult fails that plugin).
    """

    framework: Any
    pod: Pod
    cluster: ClusterState
    state: CycleState
    plugins: list[str]
    rejected: np.ndarray  # (N, P) bool
    statuses: dict[str, NodeStatus]  # Filter results, by plugin
    outside: dict[str, np.ndarray]  # plugin -> (N,) nodes outside its PreFilterResult
    pod_rejections: list[Status]  # PreFilter statuses rejecting the pod on every node
    request: np.ndarray | None  # (R,) NodeResourcesFit's request vector, None without the plugin
    shortfall: np.ndarray  # (N, R) int64: requested + request - allocatable where Fit found it short, else 0
    pods_short: np.ndarray  # (N,) int64: pods over the node's allowed count with this one, where short
    failing: np.ndarray  # (N,) int: how many plugins reject each node
    relative: np.ndarray  # (N,) float: the resource shortfalls relative to allocatable, summed
    _cache: dict[Any, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> np.ndarray:
        return self.failing == 0

    def column(self, plugin: str) -> np.ndarray:
        """Returns the (N,) mask of nodes the plugin rejects (all False for a plugin not in the table)."""
        if plugin not in self.plugins:
            return np.zeros(self.cluster.n, dtype=bool)
        return self.rejected[:, self.plugins.index(plugin)]

    @property
    def beyond(self) -> np.ndarray:
        """(N,) nodes whose whole allocatable cannot hold one of the pod's requests (no room freed
        there helps): shortfall > requested means request > allocatable."""
        return ((self.shortfall > self.cluster.requested) & (self.shortfall > 0)).any(axis=1) | (
            self.pods_short > self.cluster.pod_count)

    def ranking(self) -> np.ndarray:
        """Returns the rejected nodes' positions, nearest first: fewest failing plugins, then the
        smallest resource shortfall relative to allocatable, then node name. Nodes too small for a
        request (or offering none of a requested resource) come after all others: nothing on them
        can be changed to make room."""
        def build() -> np.ndarray:
            rows = np.flatnonzero(self.failing > 0)
            by_name = rows[np.argsort(self.cluster.name_array[rows], kind="stable")]
            return by_name[np.lexsort((self.relative[by_name], self.failing[by_name], self.beyond[by_name]))]
        return self.cached("ranking", build)

    def cached(self, key: Any, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]


# -- running every plugin --------------------------------------------------------------------------


def analyze(framework, pod: Pod, cluster: ClusterState) -> Verdicts:
    """Runs every PreFilter and Filter plugin of the framework's profile over every node.

    As RunPreFilterPlugins and RunFilterPlugins, with one CycleState, but nothing stops early: a
    PreFilter that rejects the pod is recorded (its Filter, which would read state it may not have
    written, is not run) and the others still run; every Filter runs over every node. A PreFilter
    that skips skips its Filter, as upstream's does.
    """
    state = CycleState()
    n = cluster.n
    skipped: set[str] = set()
    pod_rejections: list[Status] = []
    outside: dict[str, np.ndarray] = {}
    for plugin in framework.points["preFilter"]:
        status = run_pre_filter(plugin, state, pod, cluster)
        if status.is_skip:
            skipped.add(plugin.name)
            continue
        if status.is_rejected:
            pod_rejections.append(status)
            skipped.add(plugin.name)
            continue
        if status.node_mask is not None:
            outside[plugin.name] = ~status.node_mask
    statuses: dict[str, NodeStatus] = {}
    for plugin in framework.points["filter"]:
        if plugin.name in skipped:
            continue
        status = plugin.filter(state, pod, cluster)
        if (status.code == Code.ERROR).any():
            raise status.error or PluginError(f"running Filter plugin {plugin.name!r}: {status.reasons}")
        statuses[plugin.name] = status

    pod_wide = [s.plugin for s in pod_rejections]
    filtered = [p.name for p in framework.points["filter"] if p.name in statuses or p.name in outside]
    plugins = list(dict.fromkeys([*pod_wide, *filtered, *outside]))
    rejected = np.zeros((n, len(plugins)), dtype=bool)
    for k, name in enumerate(plugins):
        if name in pod_wide:
            rejected[:, k] = True
            continue
        if name in statuses:
            rejected[:, k] |= statuses[name].rejected
        if name in outside:
            rejected[:, k] |= outside[name]
    request, shortfall, pods_short = _shortfalls(state, cluster, statuses.get(FIT))
    relative = _relative(cluster, shortfall, pods_short)
    return Verdicts(framework, pod, cluster, state, plugins, rejected, statuses, outside, pod_rejections, request,
                    shortfall, pods_short, rejected.sum(axis=1), relative)


def _shortfalls(state: CycleState, cluster: ClusterState,
                fit: NodeStatus | None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """What NodeResourcesFit found short, per node and resource: requested + request - allocatable."""
    n, r = cluster.n, len(cluster.resources)
    shortfall = np.zeros((n, r), dtype=np.int64)
    pods_short = np.zeros(n, dtype=np.int64)
    if fit is None or fit.reason_mask is None:
        return None, shortfall, pods_short
    request = np.asarray(state[node_resources_fit.PRE_FILTER_KEY], dtype=np.int64)
    if len(request) < r:
        request = np.pad(request, (0, r - len(request)))
    column = {reason: j for j, reason in enumerate(fit.reasons)}
    for k, name in enumerate(cluster.resources):
        j = column.get(node_resources_fit.insufficient_reason(name))
        if j is not None:
            short = fit.reason_mask[:, j]
            shortfall[short, k] = cluster.requested[short, k] + request[k] - cluster.allocatable[short, k]
    j = column.get(node_resources_fit.TOO_MANY_PODS)
    if j is not None:
        short = fit.reason_mask[:, j]
        pods_short[short] = cluster.pod_count[short] + 1 - cluster.allowed_pods[short]
    return request, shortfall, pods_short


def _relative(cluster: ClusterState, shortfall: np.ndarray, pods_short: np.ndarray) -> np.ndarray:
    """Sums each node's shortfalls as shares of its allocatable (infinite where it has none)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(shortfall > 0, shortfall / cluster.allocatable, 0.0)
        pods = np.where(pods_short > 0, pods_short / cluster.allowed_pods, 0.0)
    return shares.sum(axis=1) + pods


# -- the nearest nodes -----------------------------------------------------------------------------


def nearest_nodes(framework, pod: Pod, cluster: ClusterState, limit: int | None = 3, *,
                  verdicts: Verdicts | None = None) -> list[NearNode]:
    """Returns the rejected nodes nearest to fitting with what each lacks, nearest first (see
    Verdicts.ranking); `limit` 0 or None returns every such node. Nodes outside a PreFilterResult
    (a DaemonSet pod's other nodes) are no way for the pod: they are left out. Pass the `verdicts`
    of an earlier `analyze` to reuse them."""
    v = verdicts if verdicts is not None else analyze(framework, pod, cluster)
    outside = np.zeros(cluster.n, dtype=bool)
    for mask in v.outside.values():
        outside |= mask
    rows = [i for i in v.ranking().tolist() if not outside[i]]
    if limit:
        rows = rows[:limit]
    return [NearNode(cluster.names[i], lacks_of(v, i)) for i in rows]


def lacks_of(v: Verdicts, i: int) -> list[Lack]:
    """Returns everything node i lacks, plugin by plugin in profile order."""
    out: list[Lack] = []
    for k, name in enumerate(v.plugins):
        if not v.rejected[i, k]:
            continue
        pod_wide = next((s for s in v.pod_rejections if s.plugin == name), None)
        if pod_wide is not None:
            out.append(Lack(name, _kind_of(name), pod_wide.message,
                            {"preFilter": True, "reasons": list(pod_wide.reasons), "code": CODE_NAMES[pod_wide.code]}))
            continue
        status = v.statuses.get(name)
        lacks = _BUILDERS.get(name, _other)(v, name, i, status) if status is not None and status.code[i] else []
        if name in v.outside and v.outside[name][i]:
            if lacks:
                for lack in lacks:
                    lack.detail["outsidePreFilterResult"] = True
            else:
                lacks = [_outside(v, i, name)]
        out.extend(lacks)
    return out


def _kind_of(plugin: str) -> str:
    kinds = {FIT: RESOURCE, TAINTS: TAINT, AFFINITY: NODE_AFFINITY, PORTS: HOST_PORT, SPREAD: TOPOLOGY_SPREAD,
             POD_TERMS: POD_AFFINITY, CORDON: UNSCHEDULABLE, NAMED: NODE_NAME}
    return kinds.get(plugin) or re.sub(r"(?<!^)(?=[A-Z])", "-", plugin).lower()


def _outside(v: Verdicts, i: int, plugin: str) -> Lack:
    text = (f"not among the nodes the pod's required node affinity names ({NAME_FIELD})" if plugin == AFFINITY
            else f"outside the nodes {plugin}'s PreFilter kept")
    return Lack(plugin, _kind_of(plugin), text, {"outsidePreFilterResult": True})


def _explained(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """A plugin whose explanation is the readable line (the volume plugins: which claim, which
    volume, which zone or limit): the explanation, with the reasons in the detail."""
    lines = list(status.explain(i)) if status.explain is not None else []
    reasons = status.reasons_of(i)
    return [Lack(plugin, _kind_of(plugin), "; ".join(lines or reasons) or "rejected",
                 {"reasons": reasons, "details": lines})]


def _other(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """Any other plugin: its reasons, and the numbers behind them when it explains itself."""
    reasons = status.reasons_of(i)
    detail: dict[str, Any] = {"reasons": reasons}
    if status.explain is not None:
        detail["details"] = list(status.explain(i))
    return [Lack(plugin, _kind_of(plugin), "; ".join(reasons) or "rejected", detail)]


# NodeResourcesFit


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _resources(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    cluster = v.cluster
    shortfall, request, used, allocatable = {}, {}, {}, {}
    parts, notes, beyond = [], [], []
    if v.pods_short[i]:
        shortfall[PODS] = str(int(v.pods_short[i]))
        count, allowed = int(cluster.pod_count[i]), int(cluster.allowed_pods[i])
        request[PODS], used[PODS], allocatable[PODS] = "1", str(count), str(allowed)
        notes.append(f"no room for another pod ({count}/{allowed} pods)")
    for k in np.flatnonzero(v.shortfall[i] > 0).tolist():
        name = cluster.resources[k]
        wanted, alloc = int(v.request[k]), int(cluster.allocatable[i, k])
        shortfall[name] = format_amount(name, int(v.shortfall[i, k]))
        request[name] = format_amount(name, wanted)
        used[name] = format_amount(name, int(cluster.requested[i, k]))
        allocatable[name] = format_amount(name, alloc)
        if wanted > alloc:  # no room freed on this node can hold it
            beyond.append(name)
            notes.append(f"{name} request {readable_amount(name, wanted)} exceeds its allocatable "
                         f"{readable_amount(name, alloc)}")
        else:
            parts.append(f"{readable_amount(name, int(v.shortfall[i, k]))} {name}")
    text = "; ".join(([f"{_and(parts)} short"] if parts else []) + notes)
    detail: dict[str, Any] = {"shortfall": shortfall, "request": request, "used": used, "allocatable": allocatable}
    if beyond:
        detail["beyondAllocatable"] = beyond
    return [Lack(FIT, RESOURCE, text, detail)]


# TaintToleration


def _format_taint(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def untolerated_taints(v: Verdicts, taint_set: int) -> tuple[Taint, ...]:
    """The NoSchedule/NoExecute taints of one of the cluster's taint sets the pod does not tolerate
    (every one, where the plugin stops at the first)."""
    def build() -> tuple[Taint, ...]:
        tolerations = v.pod.tolerations
        return tuple(t for t in v.cluster.taint_sets[taint_set] if t.effect in taint_toleration.DO_NOT_SCHEDULE_EFFECTS
                     and not any(tol.tolerates(t) for tol in tolerations))
    return v.cached(("untolerated", taint_set), build)


def _taints(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    taints = untolerated_taints(v, int(v.cluster.taint_set_ids[i]))
    names = [_format_taint(t) for t in taints]
    text = (f"taint {names[0]} not tolerated" if len(names) == 1 else f"taints {_and(names)} not tolerated")
    return [Lack(TAINTS, TAINT, text,
                 {"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]})]


# NodeAffinity


def _pod_affinity_input(v: Verdicts) -> tuple[dict[str, str], Any]:
    state = v.state.get(node_affinity.PRE_FILTER_STATE_KEY)
    if state is not None:
        return state
    required = ((v.pod.affinity or {}).get("nodeAffinity") or {}).get(node_affinity.REQUIRED)
    return dict(v.pod.node_selector), required


def _unmet_terms(v: Verdicts, terms: list, i: int) -> list[dict[str, Any]]:
    """For each term, the first requirement node i does not meet (terms are ORed; a node matching
    none fails)."""
    cluster = v.cluster
    labels = cluster.nodes[i].labels
    out = []
    for t, term in enumerate(terms):
        if is_empty_term(term):
            out.append({"term": t, "requirement": "", "text": f"term {t} is empty and matches no node"})
            continue
        for kind, is_field in (("matchExpressions", False), ("matchFields", True)):
            unmet = next((req for req in term.get(kind) or ()
                          if not v.cached(("requirement", id(req)), lambda req=req, f=is_field: requirement_mask(
                              req, cluster, f))[i]), None)
            if unmet is not None:
                key = unmet.get("key") or ""
                have = cluster.names[i] if is_field else labels.get(key)
                seen = f"node has {key}={have}" if have is not None else f"node has no label {key}"
                out.append({"term": t, "requirement": describe_requirement(unmet), "key": key, "have": have,
                            "text": f"{describe_requirement(unmet)} not met ({seen})"})
                break
    return out


def _node_affinity(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    cluster = v.cluster
    plugin = v.framework.plugins.get(AFFINITY)
    out = []
    added = getattr(plugin, "added_required", None)
    if added is not None and not v.cached("enforced", lambda: node_selector_terms_mask(added, cluster))[i]:
        unmet = _unmet_terms(v, added, i)
        out.append(Lack(AFFINITY, NODE_AFFINITY,
                        "matches no term of the scheduler-enforced node affinity: "
                        + "; ".join(f"term {u['term']}: {u['text']}" for u in unmet),
                        {"enforced": True, "terms": [{k: x for k, x in u.items() if k != "text"} for u in unmet]}))
    selector, required = _pod_affinity_input(v)
    labels = cluster.nodes[i].labels
    mismatched = [(key, str(want), labels.get(key)) for key, want in (selector or {}).items()
                  if labels.get(key) != str(want)]
    if mismatched:
        texts = [f"nodeSelector {key}={want}: node has " + (f"{key}={have}" if have is not None else f"no label {key}")
                 for key, want, have in mismatched]
        out.append(Lack(AFFINITY, NODE_SELECTOR, "; ".join(texts),
                        {"mismatched": [{"key": key, "want": want, "have": have} for key, want, have in mismatched]}))
    if required is not None:
        terms = list(required.get("nodeSelectorTerms") or [])
        if not v.cached("required", lambda: node_selector_terms_mask(terms, cluster))[i]:
            unmet = _unmet_terms(v, terms, i)
            if not terms:
                text = "required node affinity has no term, so no node matches"
            elif len(terms) == 1:
                text = f"required node affinity: {unmet[0]['text']}"
            else:
                text = "no required node-affinity term matches: " + "; ".join(
                    f"term {u['term']}: {u['text']}" for u in unmet)
            out.append(Lack(AFFINITY, NODE_AFFINITY, text,
                            {"terms": [{k: x for k, x in u.items() if k != "text"} for u in unmet]}))
    return out or _other(v, plugin_name, i, status)


# PodTopologySpread


def spread_skews(v: Verdicts) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """Per DoNotSchedule constraint of the PreFilter state: (the spread, whether each node carries
    its topology key, the skew placing the pod on each node would make), as Filter computes it."""
    def build():
        out = []
        state = v.state.get(pod_topology_spread.PRE_FILTER_STATE_KEY)
        for s in state.spreads if state is not None else ():
            col = v.cluster.label_column(s.constraint.topology_key)
            present = col.present
            match = s.counts[np.where(present, col.codes, 0)] if len(s.counts) else np.zeros(v.cluster.n, np.int64)
            out.append((s, present, np.where(present, match, 0) + s.self_match - s.min_match))
        return out
    return v.cached("skews", build)


def _spread(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    texts, constraints = [], []
    for s, present, skew in spread_skews(v):
        c = s.constraint
        if not present[i]:
            texts.append(f"no {c.topology_key} label")
            constraints.append({"topologyKey": c.topology_key, "missingLabel": True, "maxSkew": c.max_skew})
            continue
        if skew[i] <= c.max_skew:
            continue
        col = v.cluster.label_column(c.topology_key)
        code = int(col.codes[i])
        texts.append(f"{c.topology_key}: skew {int(skew[i])} > maxSkew {c.max_skew}")
        constraints.append({"topologyKey": c.topology_key, "domain": col.values[code],
                            "matching": int(s.counts[code]), "minMatching": int(s.min_match),
                            "skew": int(skew[i]), "maxSkew": c.max_skew, "minDomains": c.min_domains,
                            "selector": str(c.selector)})
    if not texts:
        return _other(v, plugin, i, status)
    return [Lack(SPREAD, TOPOLOGY_SPREAD, "; ".join(texts), {"constraints": constraints})]


# InterPodAffinity


def _names(keys: list[str]) -> str:
    shown = keys[:MAX_NAMED]
    more = len(keys) - len(shown)
    return _and(shown + [f"{more} more"]) if more else _and(shown)


def _domain(cluster: ClusterState, key: str, i: int) -> str | None:
    col = cluster.label_column(key)
    return col.values[col.codes[i]] if col.codes[i] >= 0 else None


def _same_domain(cluster: ClusterState, key: str, nodes: np.ndarray, i: int) -> np.ndarray:
    codes = cluster.label_column(key).codes
    return (codes[nodes] == codes[i]) & (codes[i] >= 0)


def _in_domain(v: Verdicts, mask: np.ndarray, key: str, i: int) -> list[str]:
    """The pods of a (size,) mask over the pod index on nodes in node i's domain of key, sorted."""
    index = PodIndex.of(v.cluster)
    slots = np.flatnonzero(mask)
    slots = slots[_same_domain(v.cluster, key, index.node[slots], i)]
    return sorted(index.pods[s].key for s in slots.tolist())


def _pod_terms(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    pre = v.state[inter_pod_affinity.PRE_FILTER_STATE_KEY]
    affinity, anti, affinity_counts, anti_counts = pre.affinity, pre.anti, pre.affinity_counts, pre.anti_counts
    self_match = pre.self_match
    cluster = v.cluster
    index = PodIndex.of(cluster)
    plugin = v.framework.plugins.get(POD_TERMS)
    namespaces = inter_pod_affinity._namespace_labels(getattr(plugin, "handle", None))
    out = []
    row = np.array([i])
    if affinity:
        first_of_kind = not affinity_counts.any_positive() and self_match
        missing = []
        for t in affinity:
            value = _domain(cluster, t.topology_key, i)
            if value is None:
                missing.append({"topologyKey": t.topology_key, "selector": str(t.selector), "missingLabel": True})
            elif not first_of_kind and not affinity_counts.at(t.topology_key, row)[0]:
                missing.append({"topologyKey": t.topology_key, "selector": str(t.selector), "domain": value})
        if missing:
            texts = [f"node has no label {m['topologyKey']}" if m.get("missingLabel") else
                     f"no pod matching {m['selector']} in {m['topologyKey']}={m['domain']}" for m in missing]
            out.append(Lack(POD_TERMS, POD_AFFINITY, "; ".join(texts), {"terms": missing}))
    conflicts, keys = [], []
    for k, t in enumerate(anti):
        value = _domain(cluster, t.topology_key, i)
        if value is None or not anti_counts.at(t.topology_key, row)[0]:
            continue
        pods = v.cached(("anti", k, value),
                        lambda t=t: _in_domain(v, index.term_mask(t, namespaces), t.topology_key, i))
        keys += pods
        conflicts.append({"topologyKey": t.topology_key, "domain": value, "selector": str(t.selector),
                          "count": len(pods), "pods": pods[:MAX_DETAIL_PODS]})
    if conflicts:
        keys = sorted(set(keys))
        where = ", ".join(f"{c['topologyKey']}={c['domain']}" for c in conflicts)
        out.append(Lack(POD_TERMS, POD_ANTI_AFFINITY, f"anti-affinity with {_names(keys)} ({where})",
                        {"conflicts": conflicts}))
    holders = _existing_anti_affinity(v, index, namespaces, i)
    if holders:
        keys = sorted({h["pod"] for h in holders})
        pods = f"pod{'s' if len(keys) > 1 else ''} {_names(keys)}"
        out.append(Lack(POD_TERMS, EXISTING_ANTI_AFFINITY, f"anti-affinity of existing {pods} rejects this pod here",
                        {"conflicts": holders[:MAX_DETAIL_PODS], "count": len(holders)}))
    return out or _other(v, plugin_name, i, status)


def _existing_anti_affinity(v: Verdicts, index: PodIndex, namespaces, i: int) -> list[dict[str, Any]]:
    """The existing pods in node i's domains whose required anti-affinity term matches the pod."""
    table = index.tables()[REQUIRED_ANTI_AFFINITY]
    if not table.terms:
        return []
    pod = v.pod

    def build():
        own = namespaces.get(pod.namespace)
        matched = np.array([t.matches(pod.labels, pod.namespace, own) for t in table.terms], dtype=bool)
        slots, ids = table.arrays()
        keep = matched[ids] & index.alive[slots]
        return slots[keep], ids[keep]
    slots, ids = v.cached("existing", build)
    out = []
    for key in sorted({table.terms[tid].topology_key for tid in np.unique(ids).tolist()}):
        value = _domain(v.cluster, key, i)
        if value is None:
            continue

        def holders(key=key) -> list[str]:
            of_key = np.array([t.topology_key == key for t in table.terms], dtype=bool)
            mine = slots[of_key[ids]]
            return sorted({index.pods[s].key for s in mine[_same_domain(v.cluster, key, index.node[mine], i)].tolist()})
        pods = v.cached(("existing", key, value), holders)
        out += [{"pod": pod, "topologyKey": key, "domain": value} for pod in pods]
    return sorted(out, key=lambda h: (h["pod"], h["topologyKey"]))


# NodePorts, NodeUnschedulable, NodeName


def _ports(v: Verdicts, plugin_name: str, i: int, status: NodeStatus) -> list[Lack]:
    plugin = v.framework.plugins[PORTS]
    wanted = v.state[node_ports.PRE_FILTER_STATE_KEY]
    clashes = plugin.clashes(wanted, v.cluster, i)
    if not clashes:
        return _other(v, plugin_name, i, status)
    seen, texts, ports = set(), [], []
    for w, used, other in clashes:
        if (w.port, w.protocol, other.key) in seen:
            continue
        seen.add((w.port, w.protocol, other.key))
        texts.append(f"host port {w.port}/{w.protocol} in use by {other.key}")
        ports.append({"port": w.port, "protocol": w.protocol, "hostIP": w.ip, "boundIP": used.ip, "pod": other.key})
    return [Lack(PORTS, HOST_PORT, "; ".join(texts), {"ports": ports})]


def _cordoned(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    return [Lack(CORDON, UNSCHEDULABLE, "node is cordoned", {"unschedulable": True})]


def _node_name(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    wanted = v.pod.node_name
    return [Lack(NAMED, NODE_NAME, f"the pod asks for node {wanted}", {"nodeName": wanted})]


def _devices(v: Verdicts, plugin: str, i: int, status: NodeStatus) -> list[Lack]:
    """DynamicResources: per claim request, the devices that match here and how many are free."""
    lines = list(status.explain(i)) if status.explain is not None else []
    return [Lack(plugin, DEVICES, "; ".join(lines) or "; ".join(status.reasons_of(i)),
                 {"reasons": status.reasons_of(i), "details": lines})]


_BUILDERS: dict[str, Callable[[Verdicts, str, int, NodeStatus], list[Lack]]] = {
    FIT: _resources, TAINTS: _taints, AFFINITY: _node_affinity, SPREAD: _spread, POD_TERMS: _pod_terms,
    PORTS: _ports, CORDON: _cordoned, NAMED: _node_name, dynamic_resources.NAME: _devices,
    **{p.NAME: _explained for p in (volume_restrictions, node_volume_limits, volume_binding, volume_zone)},
}


# -- hints -------------------------------------------------------------------------------------------


def hints(v: Verdicts) -> list[str]:
    """Cluster-wide hints that follow from the verdicts, in a fixed order: the pod rejected before
    any node, requests no node can hold, nodeSelector labels no node has; then, for the nodes one
    change away from fitting, what that change is (uncordon, tolerate a taint, free resources,
    label, free a host port, a larger maxSkew, or the one plugin in the way); else what the nearest
    node lacks."""
    out = [f"{s.plugin} rejects the pod before any node is considered: {s.message}" for s in v.pod_rejections]
    out += _too_big(v)
    out += _unlabelled(v)
    out += volume_hints(v, lambda i: "; ".join(lack.text for lack in lacks_of(v, i) if lack.plugin not in VOLUME_PLUGINS))
    singles = (_uncordon(v) + _tolerate(v) + _free_resources(v) + _label(v) + _free_ports(v) + _skew(v)
               + _single_others(v))
    out += singles
    rows = v.ranking()
    if not out and len(rows) and not v.feasible.any():
        nearest = int(rows[0])
        out.append(f"the nearest node, {v.cluster.names[nearest]}, lacks: "
                   + "; ".join(f"{lack.text} ({lack.plugin})" for lack in lacks_of(v, nearest)))
    return out


def _count(n: int, nodes: np.ndarray, cluster: ClusterState) -> str:
    """"node-b2" for one node, "3 nodes" for more."""
    return cluster.names[int(nodes[0])] if n == 1 else f"{n} nodes"


def _by_count(groups: list[tuple[int, str]]) -> list[str]:
    return [text for _, text in sorted(groups, key=lambda g: (-g[0], g[1]))]


def _only(v: Verdicts, plugin: str) -> np.ndarray:
    """Nodes the plugin alone rejects."""
    return v.column(plugin) & (v.failing == 1)


def _too_big(v: Verdicts) -> list[str]:
    if v.request is None or not v.cluster.n:
        return []
    out = []
    fit = v.statuses[FIT]
    checked = set(fit.reasons)
    for k, name in enumerate(v.cluster.resources):
        wanted = int(v.request[k])
        if wanted <= 0 or node_resources_fit.insufficient_reason(name) not in checked:
            continue
        largest = int(v.cluster.allocatable[:, k].max())
        if wanted > largest:
            out.append(f"no node has {readable_amount(name, wanted)} allocatable {name} (the largest has "
                       f"{readable_amount(name, largest)}): resize the request or add a node")
    return out


def _unlabelled(v: Verdicts) -> list[str]:
    if AFFINITY not in v.statuses:
        return []
    selector, _ = _pod_affinity_input(v)
    return [f"no node is labelled {key}={want}, which the pod's nodeSelector asks for"
            for key, want in sorted((selector or {}).items())
            if not v.cluster.label_column(key).isin([want]).any()]


def _list_nodes(v: Verdicts, nodes: np.ndarray) -> str:
    return _names(sorted(v.cluster.names[i] for i in nodes.tolist()))


def _uncordon(v: Verdicts) -> list[str]:
    """Cordoned nodes that would fit once uncordoned: rejected by NodeUnschedulable alone, or also by
    TaintToleration for the node.kubernetes.io/unschedulable taint alone (uncordoning lifts it)."""
    cordoned = v.column(CORDON)
    if not cordoned.any():
        return []
    cluster = v.cluster
    only_taint = np.array([untolerated_taints(v, s) == (node_unschedulable.UNSCHEDULABLE_TAINT,)
                           for s in range(len(cluster.taint_sets))], dtype=bool)
    taint = v.column(TAINTS)
    lifted = cordoned & ((v.failing == 1) | ((v.failing == 2) & taint & only_taint[cluster.taint_set_ids]))
    nodes = np.flatnonzero(lifted)
    if not len(nodes):
        return []
    if len(nodes) == 1:
        return [f"{cluster.names[int(nodes[0])]} would fit if uncordoned"]
    return [f"{len(nodes)} nodes would fit if uncordoned: {_list_nodes(v, nodes)}"]


def _tolerate(v: Verdicts) -> list[str]:
    only = _only(v, TAINTS)
    if not only.any():
        return []
    cluster = v.cluster
    per_set = np.bincount(cluster.taint_set_ids[only], minlength=len(cluster.taint_sets))
    groups: dict[tuple[Taint, ...], list[int]] = {}
    for s in np.flatnonzero(per_set).tolist():
        groups.setdefault(untolerated_taints(v, s), []).append(s)
    out = []
    for taints, sets in groups.items():
        nodes = np.flatnonzero(only & np.isin(cluster.taint_set_ids, sets))
        names = _and([_format_taint(t) for t in taints])
        out.append((len(nodes), f"{_count(len(nodes), nodes, cluster)} would fit if the pod tolerated {names}"))
    return _by_count(out)


def _free_resources(v: Verdicts) -> list[str]:
    """Nodes NodeResourcesFit alone rejects, grouped by what they are short of: how much more free
    room makes the nearest fit, and how much makes every one of them fit."""
    cluster = v.cluster
    only = _only(v, FIT)
    if not only.any():
        return []
    only &= ~v.beyond  # freeing room cannot help there
    if not only.any():
        return []
    short = np.column_stack([v.pods_short > 0, v.shortfall > 0])[only]
    rows = np.flatnonzero(only)
    names = [PODS, *cluster.resources]
    amounts = np.column_stack([v.pods_short, v.shortfall])
    patterns, inverse = np.unique(short, axis=0, return_inverse=True)
    out = []
    for p, pattern in enumerate(patterns):
        nodes = rows[inverse.reshape(-1) == p]
        columns = np.flatnonzero(pattern).tolist()
        nearest = nodes[np.lexsort((cluster.name_array[nodes], v.relative[nodes]))[0]]
        most = amounts[nodes].max(axis=0)

        def room(row) -> str:
            parts = [f"{readable_amount(names[c], int(row[c]))} more {names[c]}" for c in columns if c > 0]
            if pattern[0]:
                parts.append(f"room for {int(row[0])} more pod{'s' if row[0] > 1 else ''}")
            return _and(parts)

        if len(nodes) == 1:
            text = f"{cluster.names[int(nearest)]} would fit with {room(amounts[nearest])} free"
        elif (amounts[nodes] == amounts[nearest]).all():
            text = f"{len(nodes)} nodes would fit with {room(most)} free"
        else:
            text = (f"{len(nodes)} nodes would fit with {room(most)} free; the nearest, "
                    f"{cluster.names[int(nearest)]}, with {room(amounts[nearest])}")
        out.append((len(nodes), text))
    return _by_count(out)


def _label(v: Verdicts) -> list[str]:
    """Nodes NodeAffinity alone rejects for the pod's nodeSelector only: the labels that would make
    them fit. Only for pods without required node affinity, whose terms a new label could break."""
    only = _only(v, AFFINITY)
    plugin = v.framework.plugins.get(AFFINITY)
    selector, required = _pod_affinity_input(v)
    if not only.any() or not selector or required is not None or getattr(plugin, "added_required", None) is not None:
        return []
    only &= ~v.outside.get(AFFINITY, np.zeros(v.cluster.n, dtype=bool))
    items = sorted(selector.items())
    mismatch = np.column_stack([~v.cluster.label_column(key).isin([want]) for key, want in items])[only]
    rows = np.flatnonzero(only)
    patterns, inverse = np.unique(mismatch, axis=0, return_inverse=True)
    out = []
    for p, pattern in enumerate(patterns):
        nodes = rows[inverse.reshape(-1) == p]
        labels = _and([f"{key}={want}" for (key, want), miss in zip(items, pattern) if miss])
        out.append((len(nodes), f"{_count(len(nodes), nodes, v.cluster)} would fit if labelled {labels}"))
    return _by_count(out)


def _free_ports(v: Verdicts) -> list[str]:
    only = _only(v, PORTS)
    if not only.any():
        return []
    wanted = v.state[node_ports.PRE_FILTER_STATE_KEY]
    ports = sorted({f"{w.port}/{w.protocol}" for w in wanted})
    nodes = np.flatnonzero(only)
    return [f"{_count(len(nodes), nodes, v.cluster)} would fit if host port{'s' if len(ports) > 1 else ''} "
            f"{_and(ports)} were free there"]


def _skew(v: Verdicts) -> list[str]:
    """Nodes PodTopologySpread alone rejects, for one constraint only: those missing its topology
    label, and the smallest maxSkew that would let the nearest of them in."""
    only = _only(v, SPREAD)
    if not only.any():
        return []
    skews = spread_skews(v)
    failing = [~present | (skew > s.constraint.max_skew) for s, present, skew in skews]
    one = np.sum(failing, axis=0) == 1
    out = []
    for (s, present, skew), fails in zip(skews, failing):
        c = s.constraint
        mine = only & one & fails
        missing = np.flatnonzero(mine & ~present)
        if len(missing):
            out.append((len(missing), f"{_count(len(missing), missing, v.cluster)} would fit with a "
                                      f"{c.topology_key} label (topology spread needs it)"))
        over = mine & present
        if over.any():
            least = int(skew[over].min())
            nodes = np.flatnonzero(over & (skew == least))
            out.append((len(nodes), f"{_count(len(nodes), nodes, v.cluster)} would fit with maxSkew {least} on "
                                    f"{c.topology_key} (now {c.max_skew})"))
    return _by_count(out)


def _single_others(v: Verdicts) -> list[str]:
    """Nodes one other plugin alone rejects: the plugin and its reasons there."""
    covered = {CORDON, TAINTS, FIT, PORTS, SPREAD, node_volume_limits.NAME, volume_restrictions.NAME}
    selector, required = _pod_affinity_input(v) if AFFINITY in v.plugins else ({}, None)
    if selector and required is None and getattr(v.framework.plugins.get(AFFINITY), "added_required", None) is None:
        covered.add(AFFINITY)
    pod_wide = {s.plugin for s in v.pod_rejections}
    out = []
    for k, name in enumerate(v.plugins):
        if name in covered or name in pod_wide:
            continue
        only = _only(v, name)
        if name in v.outside:
            only &= ~v.outside[name]  # nodes the pod never asked for (a DaemonSet pod's other nodes)
        if not only.any():
            continue
        nodes = np.flatnonzero(only)
        status = v.statuses.get(name)
        reasons = []
        if status is not None and status.reason_mask is not None:
            hit = status.reason_mask[only].any(axis=0)
            reasons = [r for r, h in zip(status.reasons, hit.tolist()) if h]
        why = f" ({'; '.join(reasons)})" if reasons else ""
        out.append((len(nodes), f"{_count(len(nodes), nodes, v.cluster)} {'is' if len(nodes) == 1 else 'are'} "
                                f"rejected by {name} alone{why}"))
    return _by_count(out)
