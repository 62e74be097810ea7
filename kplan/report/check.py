"""The CheckReport and the CapacityReport, from what kplan.planning.check simulated."""
from __future__ import annotations

from typing import Any

from kplan.framework.runtime import NEEDS_PREEMPTION, SCHEDULED
from kplan.planning.check import CapacityRun, CheckRun, FirstFailure, WithPreemption, WorkloadRun
from kplan.planning.rollout import RolloutOutcome, Settings
from kplan.report.model import claim_entry
from kplan.report.nearest import nearest_entry
from kplan.report.units import API_VERSION
from kplan.report.victims import victims_summary


def check_report(run: CheckRun) -> dict[str, Any]:
    """The CheckReport: per workload its counts, nodes, first failure, rollout and victims; every pod's
    placement; the summary."""
    placements = []
    for p in run.placements:
        w = p.workload
        entry = {"pod": p.pod, "workload": f"{w.kind}/{w.namespace}/{w.name}", "outcome": p.outcome, "node": p.node,
                 "message": p.message}
        if p.victims is not None:
            entry["victims"] = p.victims
        placements.append(entry)
    entries = [_workload_entry(w, run.allow_preemption) for w in run.workloads]
    summary = {"workloads": len(entries), "pods": len(placements),
               "scheduled": sum(p["outcome"] == SCHEDULED for p in placements),
               "needsPreemption": sum(p["outcome"] == NEEDS_PREEMPTION for p in placements),
               "unschedulable": sum(p["outcome"] not in (SCHEDULED, NEEDS_PREEMPTION) for p in placements),
               "failed": run.failed}
    if run.allow_preemption:
        summary["evicted"] = sum(e["victims"]["pods"] for e in entries)
    return {"apiVersion": API_VERSION, "kind": "CheckReport", **run.release, "allowPreemption": run.allow_preemption,
            "summary": summary, "workloads": entries, "placements": placements}


def _workload_entry(wrun: WorkloadRun, allow_preemption: bool) -> dict[str, Any]:
    w = wrun.workload
    failure = _failure_entry(wrun.first_failure) if wrun.first_failure is not None else None
    entry: dict[str, Any] = {"kind": w.kind, "namespace": w.namespace, "name": w.name, "manifest": w.source,
                             "wanted": wrun.wanted, "placed": wrun.placed, "needsPreemption": wrun.needs_preemption,
                             "unschedulable": wrun.unschedulable, "nodes": dict(sorted(wrun.nodes.items())),
                             "firstFailure": failure}
    if w.hpa is not None:
        entry["hpa"] = w.hpa
    if wrun.rollout is not None:
        entry["rollout"] = _rollout_entry(wrun.rollout, failure)
    entry["passed"] = wrun.passed
    if allow_preemption:
        entry["victims"] = victims_summary(wrun.evicted or [])
    return entry


def _failure_entry(f: FirstFailure) -> dict[str, Any]:
    """A workload's `firstFailure`: the pod, outcome, plugin and message; `volumes` for a pod with claims;
    `nearest` and `hints` for an unschedulable one."""
    failure: dict[str, Any] = {"pod": f.pod.key, "outcome": f.result.outcome, "plugin": f.plugin,
                               "message": f.result.message}
    if f.claims is not None:
        failure["volumes"] = [claim_entry(c) for c in f.claims]
    if f.nearest is not None:
        failure["nearest"] = [nearest_entry(near) for near in f.nearest]
        failure["hints"] = list(f.hints)
    return failure


def _rollout_entry(rollout: RolloutOutcome, failure: dict[str, Any] | None) -> dict[str, Any]:
    """A workload's `rollout` (kplan.planning.rollout): the strategy, the pods before and after, every step;
    a stuck one says why: the first pending pod's FailedScheduling message."""
    steps = [{"step": s.number, "action": s.action, "created": s.created, "deleted": s.deleted,
              "oldPods": s.old_pods, "newRunning": s.new_running, "newPending": s.new_pending} for s in rollout.steps]
    entry = {**_strategy_fields(rollout.settings), "oldPods": rollout.old_pods, "newPods": rollout.new_pods,
             "steps": steps, "done": rollout.done, "stuck": None}
    stuck = rollout.stuck
    if stuck is not None:
        reason = failure["message"] if failure else "waiting for pods that do not run"
        summary = f"rollout stuck at {stuck.new_running} of {rollout.new_pods} new pods: {reason}"
        entry["stuck"] = {"afterStep": stuck.after_step, "oldPods": stuck.old_pods, "oldRunning": stuck.old_running,
                          "newRunning": stuck.new_running, "newPending": stuck.new_pending, "reason": reason,
                          "summary": summary}
    return entry


def _strategy_fields(s: Settings) -> dict[str, Any]:
    """The strategy's fields a rollout has: every kind its type, a StatefulSet its pod management and
    partition, the rolling ones their surge and unavailable counts."""
    fields = {"strategy": s.strategy, "podManagementPolicy": s.pod_management, "partition": s.partition,
              "maxSurge": s.max_surge, "maxUnavailable": s.max_unavailable}
    return {key: value for key, value in fields.items() if value is not None}


def capacity_report(run: CapacityRun) -> dict[str, Any]:
    """The CapacityReport: the count, split in free room and by preemption, why it stopped, where the
    replicas went, and the victims (with --allow-preemption) or what preemption would add (without)."""
    return {"apiVersion": API_VERSION, "kind": "CapacityReport", **run.release, "pod": run.pod,
            "allowPreemption": run.allow_preemption, "replicas": run.replicas, "replicasFree": run.free,
            "replicasByPreemption": run.replicas - run.free, "preemptingReplicas": run.preempting,
            "stopReason": run.stop_reason, "stopOutcome": run.stop_outcome, "max": run.max,
            "perNode": run.per_node, "perZone": run.per_zone,
            "victims": victims_summary(run.evicted) if run.evicted is not None else None,
            "withPreemption": _with_preemption(run.with_preemption) if run.with_preemption is not None else None}


def _with_preemption(w: WithPreemption) -> dict[str, Any]:
    if not w.more:
        return {"more": 0, "exact": w.exact}
    return {"more": w.more, "exact": w.exact, "replica": w.replica, "node": w.node,
            "victims": victims_summary(w.evicted or [])}
