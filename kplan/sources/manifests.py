"""Manifests as input: the files users pass to place, check, capacity, compare and `nodes --after`,
read into Pods and workloads (kplan.api.workloads), Services, storage objects, DRA objects and
HorizontalPodAutoscalers."""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from kplan.api.kinds import WORKLOAD_KINDS
from kplan.api.objects import Service, build
from kplan.api.workloads import Manifests, Workload, workload
from kplan.errors import InputError
from kplan.sources.files import iter_documents

# Storage objects manifests may create beside their workloads (a claim a Deployment mounts, ...).
APPLIED_STORAGE_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")


def iter_manifests(paths: Sequence[str]) -> Iterator[Any]:
    """Yields the Pods, workloads, Services, storage objects, DRA objects (DeviceClasses,
    ResourceClaims and ResourceClaimTemplates) and HorizontalPodAutoscalers of the files in order. A file with none of them is an
    input error, and so are files without a Pod or workload. Every object of the files goes through
    the running command's field validation (kplan.api.field_validation), whatever its kind."""
    from kplan.api import autoscaling, dra
    from kplan.api.field_validation import active
    from kplan.api.storage import parse as parse_storage
    fields = active()
    workloads = 0
    others: set[str] = set()
    for path in paths:
        found = 0
        for source, number, obj in iter_documents(path, manifests=True):
            where = source if number == 1 else f"{source} (document {number})"
            fields.check(obj, where)
            if obj.get("kind") == "Pod" or obj.get("kind") in WORKLOAD_KINDS:
                yield workload(obj, where)
                workloads += 1
                found += 1
            elif obj.get("kind") == "Service":
                yield build("Service", obj, where)
                found += 1
                others.add("Services")
            elif obj.get("kind") in APPLIED_STORAGE_KINDS:
                yield parse_storage(obj["kind"], obj, where, validate=True)
                found += 1
                others.add(f"{obj['kind']}s")
            elif obj.get("kind") == autoscaling.KIND:
                if obj.get("apiVersion") not in autoscaling.API_VERSIONS:
                    raise InputError(f"{autoscaling.KIND}: apiVersion {obj.get('apiVersion')!r} is not one kplan "
                                     f"reads ({', '.join(autoscaling.API_VERSIONS)})", where)
                yield autoscaling.parse_hpa(obj, where)
                found += 1
                others.add(f"{autoscaling.KIND}s")
            elif obj.get("kind") in dra.PARSERS and obj.get("kind") != dra.RESOURCE_SLICE:
                if not dra.reads(obj.get("kind"), obj.get("apiVersion")):
                    raise InputError(f"{obj.get('kind')}: apiVersion {obj.get('apiVersion')!r} is not one kplan "
                                     f"reads ({', '.join(dra.API_VERSIONS)})", where)
                yield dra.parse(obj["kind"], obj, where)
                found += 1
                others.add(f"{obj['kind']}s")
        if not found:
            raise InputError("no Pod or workload in it", path)
    if paths and not workloads:
        raise InputError(f"no Pod or workload in it (only {' and '.join(sorted(others))})", ", ".join(paths))


def iter_workloads(paths: Sequence[str]) -> Iterator[Workload]:
    """Yields the Pods and workloads of the files in order (Services are passed over)."""
    return (m for m in iter_manifests(paths) if isinstance(m, Workload))


def load_manifests(paths: Sequence[str]) -> Manifests:
    """The files' objects sorted for a simulation: workloads in order, Services, storage, DRA objects, HPAs."""
    from kplan.api import dra
    from kplan.api.autoscaling import HorizontalPodAutoscaler
    out = Manifests()
    for m in iter_manifests(paths):
        if isinstance(m, Workload):
            out.workloads.append(m)
        elif isinstance(m, Service):
            out.services.append(m)
        elif isinstance(m, HorizontalPodAutoscaler):
            out.hpas.append(m)
        elif isinstance(m, dra.DRA_RECORDS):
            out.devices.append(m)
        else:
            out.storage.append(m)
    return out
