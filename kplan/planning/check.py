"""`kplan check` and `kplan capacity`: many replicas through the scheduling cycle, without per-pod reports.

Both place pods with Planner.schedule (no ranking, no node dicts), so the per-replica cost is
the scheduling cycle alone. The reports are plain dicts (the JSON contract); JUnit XML and
GitHub workflow commands are rendered from them.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from functools import partial
from typing import Any, Callable, Iterable, Sequence
from xml.etree import ElementTree as ET

from kplan.api.objects import Pod, build
from kplan.api.storage import uses_claims
from kplan.cluster.volumes import claim_facts
from kplan.api.workloads import Workload, manifest_pod, with_claim_volumes
from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED, CycleResult
from kplan.planning.victims import Eviction, evictions
from kplan.report.units import API_VERSION

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

def first_failure(planner, pod: Pod, result: CycleResult) -> dict[str, Any]:
    """The first pod of a workload that did not fit: its outcome, the plugin and message, its claims
    when it has any, and the nearest nodes and hints of the nearest-nodes analysis (over the table as
    its cycle saw it)."""
    from kplan.report.model import claim_entry
    from kplan.report.nearest import what_would_make_it_fit_fields
    failure: dict[str, Any] = {"pod": pod.key, "outcome": result.outcome, "plugin": failing_plugin(result),
                               "message": result.message}
    if uses_claims(pod.spec):
        failure["volumes"] = [claim_entry(f) for f in claim_facts(result.pod, planner.cluster.volumes)]
    failure.update(what_would_make_it_fit_fields(planner, result))
    return failure


def run_check(planner, workloads: Sequence[Workload], allow_preemption: bool = False,
              progress: Progress | None = None, first_pod: Callable[[Pod], None] | None = None,
              rollout: bool = True) -> dict[str, Any]:
    """Simulates every workload's pods in order; returns the CheckReport. `first_pod` is called with
    each workload's first pod just before it is scheduled (a report previews it there). With
    `rollout`, a Deployment, StatefulSet or DaemonSet the snapshot runs is updated as its controller
    would (kplan.planning.rollout); otherwise every workload is created beside what runs. With
    `allow_preemption`, each workload's entry lists the pods its preemptions evicted (`victims`), and so
    does each placement that preempted."""
    from kplan.planning.rollout import Running
    entries: list[dict[str, Any]] = []
    placements: list[dict[str, Any]] = []
    nodes = planner.snapshot.nodes
    running = Running.of(planner.snapshot) if rollout else None
    for w in workloads:
        pods = w.pods(nodes)
        entry: dict[str, Any] = {"kind": w.kind, "namespace": w.namespace, "name": w.name,
                                 "manifest": w.source, "wanted": len(pods), "placed": 0,
                                 "needsPreemption": 0, "unschedulable": 0, "nodes": {}, "firstFailure": None}
        if w.hpa is not None:
            entry["hpa"] = w.hpa
        if pods and first_pod is not None:
            first_pod(pods[0])
        where: Counter = Counter()
        record = partial(_record, planner, w, entry, placements, where, allow_preemption)
        first_eviction, first_placement = len(planner.evictions), len(placements)
        if running is not None and running.runs(w):
            _roll_out(planner, w, pods, running.old_pods(w), entry, record, allow_preemption, progress)
        else:
            for pod in pods:
                record(pod, planner.schedule(pod, apply_preemption=allow_preemption))
                if progress:
                    progress(1)
        entry["nodes"] = dict(sorted(where.items()))
        entry["passed"] = entry["firstFailure"] is None and not (entry.get("rollout") or {}).get("stuck")
        if allow_preemption:
            _victims(entry, placements[first_placement:], planner.evictions[first_eviction:])
        entries.append(entry)
    summary = {"workloads": len(entries), "pods": len(placements),
               "scheduled": sum(p["outcome"] == SCHEDULED for p in placements),
               "needsPreemption": sum(p["outcome"] == NEEDS_PREEMPTION for p in placements),
               "unschedulable": sum(p["outcome"] not in (SCHEDULED, NEEDS_PREEMPTION) for p in placements),
               "failed": sum(not e["passed"] for e in entries)}
    if allow_preemption:
        summary["evicted"] = sum(e["victims"]["pods"] for e in entries)
    return {"apiVersion": API_VERSION, "kind": "CheckReport", **planner.release_fields(),
            "allowPreemption": allow_preemption,
            "summary": summary, "workloads": entries, "placements": placements}


def _record(planner, w: Workload, entry: dict[str, Any], placements: list[dict[str, Any]], where: Counter,
            allow_preemption: bool, pod: Pod, result: CycleResult) -> None:
    """Counts one pod's outcome into its workload's entry (where it went, the first failure) and the placements."""
    node = planner.cluster.names[result.node] if result.node is not None else None
    placements.append({"pod": pod.key, "workload": f"{w.kind}/{w.namespace}/{w.name}",
                       "outcome": result.outcome, "node": node, "message": result.message})
    if result.outcome == SCHEDULED:
        entry["placed"] += 1
        where[node] += 1
    else:
        if result.outcome == NEEDS_PREEMPTION:
            entry["needsPreemption"] += 1
            if allow_preemption:
                where[node] += 1
        else:
            entry["unschedulable"] += 1
        if entry["firstFailure"] is None and not (result.outcome == NEEDS_PREEMPTION and allow_preemption):
            entry["firstFailure"] = first_failure(planner, pod, result)


def _victims(entry: dict[str, Any], placements: list[dict[str, Any]], evicted: Sequence[Eviction]) -> None:
    """A workload's victims: in its entry, and by name in each of its placements that evicted pods."""
    from kplan.report.victims import victims_summary
    entry["victims"] = victims_summary(evicted)
    by_preemptor: dict[str, list[str]] = {}
    for e in evicted:
        by_preemptor.setdefault(e.preemptor, []).append(e.victim.key)
    for p in placements:
        if p["pod"] in by_preemptor:
            p["victims"] = by_preemptor[p["pod"]]


def _roll_out(planner, w: Workload, pods: list[Pod], old: list[Pod], entry: dict[str, Any],
              record: Callable[[Pod, CycleResult], None], allow_preemption: bool, progress: Progress | None) -> None:
    """The update of a workload the snapshot runs: the new pods' final outcomes, and `rollout` (see
    kplan.planning.rollout) with, when it is stuck, the first pending pod's FailedScheduling message."""
    from kplan.planning.rollout import run_rollout
    run, entry["rollout"] = run_rollout(planner, w, old, pods, allow_preemption, progress)
    for pod in run.created:
        record(pod, run.results[pod.key])
    stuck = entry["rollout"]["stuck"]
    if stuck is not None:
        failure = entry["firstFailure"]
        stuck["reason"] = failure["message"] if failure else "waiting for pods that do not run"
        stuck["summary"] = (f"rollout stuck at {stuck['newRunning']} of {entry['rollout']['newPods']} new pods: "
                            f"{stuck['reason']}")


def rollout_line(e: dict[str, Any]) -> str:
    """What a stuck rollout says in JUnit, GitHub annotations and tables ("" for any other entry)."""
    stuck = (e.get("rollout") or {}).get("stuck")
    return stuck["summary"] if stuck else ""


DOCUMENT = re.compile(r"^(.*) \(document (\d+)\)$")


def manifest_location(source: str) -> tuple[str, int | None]:
    """Splits a workload's source, "path (document N)", into the path and N (None for a file's only
    or first document)."""
    match = DOCUMENT.match(source)
    return (match.group(1), int(match.group(2))) if match else (source, None)


def ci_path(path: str) -> str:
    """A manifest's path as CI systems link files: relative to $GITHUB_WORKSPACE when it holds the file,
    else to the root of the git checkout holding it, else as given, normalized ("../w/apps.yaml")."""
    absolute = os.path.abspath(path)
    roots = [os.environ.get("GITHUB_WORKSPACE") or "", _checkout_root(os.path.dirname(absolute)) or ""]
    for root in roots:
        if root and os.path.commonpath([os.path.abspath(root), absolute]) == os.path.abspath(root):
            return os.path.relpath(absolute, root)
    return os.path.normpath(path)


def _checkout_root(folder: str) -> str | None:
    """The nearest folder at or above `folder` with a .git in it (a checkout, or a worktree's file)."""
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _case_name(e: dict[str, Any]) -> str:
    """A workload's test case: kind/ns/name, with its document's index when its file holds several."""
    _, document = manifest_location(e["manifest"])
    name = f"{e['kind']}/{e['namespace']}/{e['name']}"
    return f"{name} (document {document})" if document else name


def junit_xml(report: dict[str, Any]) -> bytes:
    """One testsuite "kplan"; one testcase per workload (classname kplan.check, name kind/ns/name, file
    its manifest as CI links it); a failure's text adds the nearest nodes and the hints."""
    from kplan.report.check_table import failure_lines
    entries = report["workloads"]
    suite = ET.Element("testsuite", name="kplan", tests=str(len(entries)),
                       failures=str(sum(not e["passed"] for e in entries)), errors="0", skipped="0")
    for e in entries:
        case = ET.SubElement(suite, "testcase", classname="kplan.check", name=_case_name(e),
                             file=ci_path(manifest_location(e["manifest"])[0]))
        if not e["passed"]:
            f = e["firstFailure"] or {}
            stuck = rollout_line(e)
            failure = ET.SubElement(case, "failure", message=stuck or f["message"],
                                    type="RolloutStuck" if stuck else f["outcome"])
            failure.text = f"{e['placed']}/{e['wanted']} replicas placed"
            if f:
                failure.text += f"; first failure: pod {f['pod']} ({f['outcome']}, {f['plugin']}): {f['message']}"
            if stuck:
                failure.text = f"{stuck}\n{failure.text}"
            failure.text = "\n".join([failure.text, *failure_lines(f)])
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: dict[str, Any]) -> list[str]:
    """GitHub workflow commands, one ::error per failed workload, pointing at its manifest; the message
    goes on with the nearest nodes and the hints, a line each."""
    from kplan.report.check_table import failure_lines
    lines = []
    for e in report["workloads"]:
        if e["passed"]:
            continue
        f = e["firstFailure"] or {}
        manifest = ci_path(manifest_location(e["manifest"])[0])
        what = rollout_line(e) or f"{f['pod']} {f['outcome']}: {f['message']}"
        msg = "\n".join([f"{e['kind']}/{e['namespace']}/{e['name']}: {e['placed']}/{e['wanted']} replicas placed; "
                         f"{what}", *failure_lines(f)])
        title = "kplan " + (f.get("plugin") or "rollout")
        lines.append(f"::error file={_escape_property(manifest)},title={_escape_property(title)}"
                     f"::{_escape_data(msg)}")
    return lines


def markdown_summary(report: dict[str, Any]) -> str:
    """A Markdown table for $GITHUB_STEP_SUMMARY; under it, per failed workload, what its first failed
    pod's nearest nodes lack and the hints."""
    from kplan.report.check_table import failure_lines
    s = report["summary"]
    verdict = "passed" if not s["failed"] else f"{s['failed']} workload(s) failed"
    lines = [f"### kplan check: {verdict}", "",
             "| Workload | Placed | Where | First failure |", "| --- | --- | --- | --- |"]
    for e in report["workloads"]:
        where = ", ".join(f"{n}×{c}" for n, c in e["nodes"].items()) or "-"
        failure = _markdown(rollout_line(e) or (e["firstFailure"]["message"] if e["firstFailure"] else "")).replace(
            "|", "\\|")
        lines.append(f"| {e['kind']}/{e['namespace']}/{e['name']} | {e['placed']}/{e['wanted']} | {where} | {failure} |")
    for e in report["workloads"]:
        more = failure_lines(e["firstFailure"] or {})
        if more:
            lines += ["", f"**{e['kind']}/{e['namespace']}/{e['name']}**, pod `{e['firstFailure']['pod']}`:", ""]
            lines += [f"- {_markdown(line)}" for line in more]
    return "\n".join(lines) + "\n\n"


def _markdown(text: str) -> str:
    """Text as it reads in Markdown: the characters that would start markup escaped."""
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", text)


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


def run_capacity(planner, template: Pod, max_replicas: int | None = None, progress: Progress | None = None,
                 wanted: bool = False, allow_preemption: bool = False) -> dict[str, Any]:
    """Places copies of the pod until one does not fit (or --max); returns the CapacityReport. With
    `wanted`, max_replicas is what --replicas asks for, not a --max.

    With `allow_preemption`, a copy that fits only by preempting evicts its victims, lands on its
    nominated node and the count goes on, later copies seeing the evictions: it stops at the first copy
    that fits nowhere even with preemption. Without, that copy stops the count, and `withPreemption`
    says how many more preemption would let fit as far as this run knows it.
    """
    from kplan.report.victims import victims_summary
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
    return {"apiVersion": API_VERSION, "kind": "CapacityReport", **planner.release_fields(), "pod": template.key,
            "allowPreemption": allow_preemption, "replicas": count, "replicasFree": free,
            "replicasByPreemption": count - free, "preemptingReplicas": preempting,
            "stopReason": stop, "stopOutcome": outcome, "max": None if wanted else max_replicas,
            "perNode": {names[i]: c for i, c in sorted(per_node.items(), key=lambda kv: names[kv[0]])},
            "perZone": _per_zone(planner.cluster, per_node),
            "victims": victims_summary(planner.evictions[first_eviction:]) if allow_preemption else None,
            "withPreemption": None if allow_preemption else _with_preemption(planner, last, count, max_replicas)}


def _per_zone(cluster, per_node: Counter) -> dict[str, int]:
    zones = cluster.label_column(ZONE_LABEL)
    per_zone: Counter = Counter()
    for i, c in per_node.items():
        code = int(zones.codes[i])
        per_zone[zones.values[code] if code >= 0 else NO_ZONE] += c
    return dict(sorted(per_zone.items()))


def _with_preemption(planner, last: CycleResult | None, count: int, limit: int | None) -> dict[str, Any]:
    """What preemption would add to a count that stopped without it: nothing, unless the copy that stopped
    it fits by preempting. Then at least that copy, which would evict the victims given; exactly it when
    it was the last copy asked for (the run knows no more without preempting)."""
    from kplan.report.victims import victims_summary
    if last is None or last.outcome != NEEDS_PREEMPTION:
        return {"more": 0, "exact": True}
    return {"more": 1, "exact": limit is not None and count + 1 >= limit, "replica": last.pod.key,
            "node": planner.cluster.names[last.node], "victims": victims_summary(evictions(last, planner.cluster))}
