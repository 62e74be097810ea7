"""Reading a live cluster, read-only: GET requests through the official `kubernetes` client.

Configuration is found as kubectl finds it: --kubeconfig, else the KUBECONFIG list, else
~/.kube/config, else the in-cluster service account; --context picks a context. Lists are
paged (limit/continue) and read as raw JSON, never as the client's model objects, and go
through the same dict-based Snapshot.add as dumps read from files.

The `kubernetes` package is imported only inside functions of this module, so `kplan --help`
and every command that reads files never load it.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from kplan.errors import ClusterAccessError, InputError
from kplan.sources.files import decode_json

PAGE_SIZE = 500
DEFAULT_TIMEOUT = 60.0  # seconds per request; --request-timeout 0 disables it
MAX_ATTEMPTS = 6  # per request, the first included, for 429/5xx, timeouts and dropped connections
MAX_TIMEOUTS = 3  # attempts that may end in a timeout, per request
RETRY_BUDGET = 60.0  # seconds a whole run may spend waiting before retries (Retry-After included)
MAX_BACKOFF = 8.0
MAX_RESTARTS = 3  # restarts of one list after its continue token expired
MAX_PAGES = 100_000  # a server that never stops paging is a bug, not a big cluster
RETRY_STATUS = (429, 500, 502, 503, 504)
IN_CLUSTER = "in-cluster"
_sleep = time.sleep  # tests replace it to count waits


@dataclass(frozen=True)
class Resource:
    """One list kplan reads: its kind, API version and plural (the RBAC resource name)."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool
    optional: bool = False  # a custom resource the cluster may not serve: a 404 skips it
    # One of several versions of a kind, newest first: read only if no earlier one was served.
    first_served: bool = False

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def rbac(self) -> str:
        """Names the RBAC resource: `"pods"`, or `"elasticquotas" in API group "scheduling.x-k8s.io"`."""
        return f'"{self.plural}"' + (f' in API group "{self.group}"' if self.group else "")

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


# The order lists are read in (and written to a snapshot). The custom resources are the ones
# kplan.sources.snapshot.EXTRA_KINDS keeps; ElasticQuota is served under either group.
RESOURCES: tuple[Resource, ...] = (
    Resource("Namespace", "v1", "namespaces", False),
    Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False),
    Resource("Node", "v1", "nodes", False),
    Resource("Pod", "v1", "pods", True),
    Resource("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True),
    # What PodTopologySpread's default selector reads (helper.DefaultSelector's listers).
    Resource("Service", "v1", "services", True),
    Resource("ReplicationController", "v1", "replicationcontrollers", True),
    Resource("ReplicaSet", "apps/v1", "replicasets", True),
    Resource("StatefulSet", "apps/v1", "statefulsets", True),
    # What `kplan check` rolls out and scales: Deployments, DaemonSets and the autoscalers of workloads.
    Resource("Deployment", "apps/v1", "deployments", True),
    Resource("DaemonSet", "apps/v1", "daemonsets", True),
    Resource("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", True),
    # What the volume plugins read (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits).
    Resource("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
    Resource("PersistentVolume", "v1", "persistentvolumes", False),
    Resource("StorageClass", "storage.k8s.io/v1", "storageclasses", False),
    Resource("CSINode", "storage.k8s.io/v1", "csinodes", False),
    Resource("CSIDriver", "storage.k8s.io/v1", "csidrivers", False),
    Resource("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", True),
    Resource("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", False),
    Resource("ElasticQuota", "scheduling.x-k8s.io/v1alpha1", "elasticquotas", True, optional=True),
    Resource("ElasticQuota", "scheduling.sigs.k8s.io/v1alpha1", "elasticquotas", True, optional=True),
    Resource("NodeMetric", "slo.koordinator.sh/v1alpha1", "nodemetrics", False, optional=True),
    # What DynamicResources reads, in the newest version the cluster serves (v1 from 1.34, v1beta2 in
    # 1.33, v1beta1 in 1.32).
    *(Resource(kind, f"resource.k8s.io/{version}", plural, namespaced, optional=True, first_served=True)
      for kind, plural, namespaced in (("DeviceClass", "deviceclasses", False),
                                       ("ResourceSlice", "resourceslices", False),
                                       ("ResourceClaim", "resourceclaims", True),
                                       ("ResourceClaimTemplate", "resourceclaimtemplates", True))
      for version in ("v1", "v1beta2", "v1beta1")),
)

# What the answers lack when a read-only role may not list a kind: kind -> what is lost. Such a list is
# skipped with a warning and recorded in the snapshot header ("forbidden": {resource: what is lost}),
# which the reports repeat; --strict makes the refusal fatal instead. Nodes and pods are not in it:
# without them there is nothing to answer about.
LOST_WHEN_FORBIDDEN: dict[str, str] = {
    "Namespace": "pod affinity's namespaceSelector sees no namespace labels",
    "PriorityClass": "pods without spec.priority get priority 0 (no PriorityClass value, no global default)",
    "PodDisruptionBudget": "preemption, drains and consolidation count no PodDisruptionBudget",
    "Service": "default topology spreading uses controllers only",
    "ReplicationController": "default topology spreading ignores ReplicationControllers",
    "ReplicaSet": "default topology spreading ignores ReplicaSets",
    "StatefulSet": "default topology spreading ignores StatefulSets, and kplan check takes a StatefulSet "
                   "manifest as new, not as an update of the one running",
    "Deployment": "kplan check takes a Deployment manifest as new, not as an update of the one running",
    "DaemonSet": "kplan check takes a DaemonSet manifest as new, not as an update of the one running",
    "HorizontalPodAutoscaler": "no autoscaler of the cluster sets the replicas of the workloads it scales",
    "PersistentVolumeClaim": "pods with persistentVolumeClaim volumes are unschedulable: their claims are not found",
    "PersistentVolume": "bound claims' volumes are not found, and unbound claims find none to bind",
    "StorageClass": "unbound claims' StorageClasses are not found",
    "CSINode": "NodeVolumeLimits finds no CSI volume limit on any node",
    "CSIDriver": "VolumeBinding checks no CSIStorageCapacity: no CSI driver asks for capacity tracking",
    "CSIStorageCapacity": "claims provisioned with capacity tracking find no capacity on any node",
    "VolumeAttachment": "NodeVolumeLimits counts only the volumes of the nodes' pods, not other attachments",
    "DeviceClass": "claims name DeviceClasses that are not found: their pods get no devices",
    "ResourceSlice": "no node publishes devices: a claim to allocate fits no node",
    "ResourceClaim": "devices held by running pods' claims look free, and pods whose claims are not found wait",
    "ResourceClaimTemplate": "a pod the run places (drained, re-planned) gets no claims from its templates",
    "ElasticQuota": "CapacityScheduling and kplan quota see no ElasticQuotas",
    "NodeMetric": "LoadAwareScheduling finds no NodeMetrics and filters no node by its load",
}

# Typed list calls of the official client: resource -> (API class, cluster-wide method, namespaced method).
_TYPED = {
    ("v1", "namespaces"): ("CoreV1Api", "list_namespace", None),
    ("v1", "nodes"): ("CoreV1Api", "list_node", None),
    ("v1", "pods"): ("CoreV1Api", "list_pod_for_all_namespaces", "list_namespaced_pod"),
    ("scheduling.k8s.io/v1", "priorityclasses"): ("SchedulingV1Api", "list_priority_class", None),
    ("policy/v1", "poddisruptionbudgets"): ("PolicyV1Api", "list_pod_disruption_budget_for_all_namespaces",
                                            "list_namespaced_pod_disruption_budget"),
    ("v1", "services"): ("CoreV1Api", "list_service_for_all_namespaces", "list_namespaced_service"),
    ("v1", "replicationcontrollers"): ("CoreV1Api", "list_replication_controller_for_all_namespaces",
                                       "list_namespaced_replication_controller"),
    ("apps/v1", "replicasets"): ("AppsV1Api", "list_replica_set_for_all_namespaces", "list_namespaced_replica_set"),
    ("apps/v1", "statefulsets"): ("AppsV1Api", "list_stateful_set_for_all_namespaces",
                                  "list_namespaced_stateful_set"),
    ("apps/v1", "deployments"): ("AppsV1Api", "list_deployment_for_all_namespaces", "list_namespaced_deployment"),
    ("apps/v1", "daemonsets"): ("AppsV1Api", "list_daemon_set_for_all_namespaces", "list_namespaced_daemon_set"),
    ("autoscaling/v2", "horizontalpodautoscalers"): ("AutoscalingV2Api",
                                                     "list_horizontal_pod_autoscaler_for_all_namespaces",
                                                     "list_namespaced_horizontal_pod_autoscaler"),
    ("v1", "persistentvolumeclaims"): ("CoreV1Api", "list_persistent_volume_claim_for_all_namespaces",
                                       "list_namespaced_persistent_volume_claim"),
    ("v1", "persistentvolumes"): ("CoreV1Api", "list_persistent_volume", None),
    ("storage.k8s.io/v1", "storageclasses"): ("StorageV1Api", "list_storage_class", None),
    ("storage.k8s.io/v1", "csinodes"): ("StorageV1Api", "list_csi_node", None),
    ("storage.k8s.io/v1", "csidrivers"): ("StorageV1Api", "list_csi_driver", None),
    ("storage.k8s.io/v1", "csistoragecapacities"): ("StorageV1Api", "list_csi_storage_capacity_for_all_namespaces",
                                                    "list_namespaced_csi_storage_capacity"),
    ("storage.k8s.io/v1", "volumeattachments"): ("StorageV1Api", "list_volume_attachment", None),
}


def parse_timeout(text: str | None) -> float | None:
    """Parses --request-timeout as kubectl does: "30s", "2m", "1h", "500ms", or plain seconds; 0 -> None."""
    if text is None:
        return DEFAULT_TIMEOUT
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", str(text))
    if not match:
        raise InputError(f"--request-timeout {text!r}: not a duration (use e.g. 30s, 2m or 0 for none)")
    seconds = float(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]
    return seconds or None


@dataclass
class LiveSource:
    """Where and how to read a live cluster (the --live / `kplan snapshot` options)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None  # namespaced lists (pods, PDBs, Services, controllers...) of this namespace only
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    request_timeout: float | None = DEFAULT_TIMEOUT
    progress: bool | None = None  # None: a progress bar when stderr is a terminal
    strict: bool = False  # a kind of LOST_WHEN_FORBIDDEN that is forbidden fails the read, as a required one

    def __post_init__(self) -> None:
        if self.as_groups and not self.as_user:
            raise InputError("--as-group needs --as (impersonating groups requires impersonating a user)")


@dataclass
class LiveDump:
    """What one read of a cluster returned: the lists (raw dicts with kind/apiVersion) and a header."""

    header: dict[str, Any]
    lists: list[tuple[Resource, list[dict]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def header_object(self) -> dict[str, Any]:
        return {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": self.header}

    def objects(self) -> Iterator[dict]:
        for _, items in self.lists:
            yield from items


def fetch(source: LiveSource, note: Callable[[str], None] | None = None) -> LiveDump:
    """Reads the cluster: /version, then every list of RESOURCES; raises ClusterAccessError on failure."""
    note = note or _stderr_note
    started, taken_at = time.monotonic(), datetime.now(timezone.utc)
    client, context, server = connect(source, note)
    try:
        reader = _Reader(client, source, server, note)
        header: dict[str, Any] = {"context": context, "server": server}
        version = reader.version()
        if version:
            header["kubeVersion"] = version
        header["takenAt"] = taken_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        if source.namespace:
            header["namespace"] = source.namespace
        dump = LiveDump(header)
        with reader.progress():
            unserved = []
            forbidden: dict[str, str] = {}
            for res in RESOURCES:
                if res.first_served and (res.label in forbidden
                                         or any(read.kind == res.kind for read, _ in dump.lists)):
                    continue
                try:
                    items = reader.list(res)
                except _Forbidden:
                    forbidden[res.label] = LOST_WHEN_FORBIDDEN[res.kind]
                    continue
                if items is None:
                    unserved.append(res)
                    continue
                dump.lists.append((res, items))
        for message in _unserved_notes(unserved, {res.kind for res, _ in dump.lists}):
            dump.notes.append(message)
            note(message)
        if forbidden:
            header["forbidden"] = forbidden
        counts: dict[str, int] = {}
        for res, items in dump.lists:
            counts[res.plural] = counts.get(res.plural, 0) + len(items)
        header["seconds"] = round(time.monotonic() - started, 3)
        header["counts"] = counts
        return dump
    finally:
        client.close()


def snapshot_live(source: LiveSource, note: Callable[[str], None] | None = None):
    """Reads the cluster into a Snapshot through the same Snapshot.add path as files."""
    from kplan.sources.snapshot import Snapshot, bulk_allocation

    snapshot = Snapshot()
    with bulk_allocation():  # as load_snapshot: no cyclic GC passes over the dicts while they pile up
        dump = fetch(source, note)
        where = f"context {dump.header.get('context')}"
        snapshot.add(dump.header_object(), where, 1)
        for res, items in dump.lists:
            origin = f"{res.label} ({where})"
            add = snapshot.add
            for item in items:
                add(item, origin, 1)
    return snapshot.finish()


def _unserved_notes(unserved: list[Resource], served_kinds: set[str]) -> list[str]:
    """One note per custom resource kind the cluster serves under none of its API groups."""
    notes = []
    for kind in dict.fromkeys(res.kind for res in unserved):
        if kind in served_kinds:
            continue
        versions = ", ".join(res.api_version for res in unserved if res.kind == kind)
        notes.append(f"the cluster does not serve {kind} ({versions}): skipped")
    return notes


def _stderr_note(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"kplan: note: {escape(message)}", style="dim")


# --- configuration -------------------------------------------------------------------------


def kubeconfig_files(explicit: str | None) -> str | None:
    """Returns the kubeconfig file(s) kubectl would read, joined with os.pathsep, or None for in-cluster."""
    if explicit:
        if not os.path.isfile(os.path.expanduser(explicit)):
            raise ClusterAccessError(f"--kubeconfig {explicit}: no such file")
        return explicit
    listed = os.environ.get("KUBECONFIG", "")
    paths = [p for p in listed.split(os.pathsep) if p] if listed else [os.path.join("~", ".kube", "config")]
    existing = [p for p in paths if os.path.isfile(os.path.expanduser(p))]
    return os.pathsep.join(existing) or None


def connect(source: LiveSource, note: Callable[[str], None] | None = None) -> tuple[Any, str, str]:
    """Returns (ApiClient, context name, server URL) for the source's kubeconfig and context.

    What the client's config loader logs (e.g. a failing exec credential plugin) becomes a note.
    """
    with _loader_logs(note or _stderr_note):
        return _connect(source)


@contextmanager
def _loader_logs(note: Callable[[str], None]) -> Iterator[None]:
    """Collects root-logger records while the config loader runs (it logs with logging.error)."""
    import logging

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(_one_line(record.getMessage()))

    messages: list[str] = []
    root, handler = logging.getLogger(), Collect(logging.WARNING)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for message in messages:
            note(f"kubeconfig: {message}")


def _connect(source: LiveSource) -> tuple[Any, str, str]:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    files = kubeconfig_files(source.kubeconfig)
    configuration = k8s.Configuration()
    configuration.retries = False  # kplan retries itself, within bounds, and fails fast on refusal
    if files is None:
        if source.context:
            raise ClusterAccessError(f"--context {source.context}: no kubeconfig found "
                                     "(set KUBECONFIG or pass --kubeconfig)")
        if not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise ClusterAccessError("no kubeconfig found (looked at $KUBECONFIG and ~/.kube/config; "
                                     "pass --kubeconfig) and not running inside a cluster")
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except (k8s_config.ConfigException, OSError, ValueError) as err:
            raise ClusterAccessError(f"in-cluster configuration: {_one_line(err)}") from None
        api, context = k8s.ApiClient(configuration), IN_CLUSTER
    else:
        where = "kubeconfig " + files.replace(os.pathsep, ", ")
        context = _check_context(files, source.context, where)
        try:
            api = k8s_config.new_client_from_config(config_file=files, context=context, persist_config=False,
                                                    client_configuration=configuration)
        except Exception as err:  # ConfigException, YAML errors, missing keys, a failing exec plugin
            raise ClusterAccessError(f"{where}: context {context!r}: {_one_line(err)}") from None
    _impersonate(api, source)
    return api, context, configuration.host


def _check_context(files: str, wanted: str | None, where: str) -> str:
    """Returns the context to use (--context, else current-context); unknown or unset -> ClusterAccessError.

    Contexts merge as kubectl merges them: the first file defining a name or a current-context wins.
    """
    import yaml
    names: list[str] = []
    current = None
    for path in files.split(os.pathsep):
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, UnicodeDecodeError) as err:
            raise ClusterAccessError(f"kubeconfig {path}: cannot read: {getattr(err, 'strerror', None) or err}"
                                     ) from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ClusterAccessError(f"kubeconfig {path}: malformed YAML{at}: "
                                     f"{getattr(err, 'problem', None) or _one_line(err)}") from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ClusterAccessError(f"kubeconfig {path}: not a kubeconfig (expected a mapping with clusters, "
                                     "users and contexts)")
        contexts = doc.get("contexts")
        for context in contexts if isinstance(contexts, list) else ():
            name = context.get("name") if isinstance(context, dict) else None
            if name and name not in names:
                names.append(str(name))
        current = current or doc.get("current-context") or None
    listing = f" (contexts: {', '.join(names)})" if names else " (it has no contexts)"
    if wanted:
        if wanted not in names:
            raise ClusterAccessError(f'context "{wanted}" not found in {where}{listing}')
        return wanted
    if not current:
        raise ClusterAccessError(f"{where}: no current-context set; pass --context{listing}")
    if current not in names:
        raise ClusterAccessError(f'{where}: current-context "{current}" is not one of its contexts{listing}')
    return str(current)


def _impersonate(api: Any, source: LiveSource) -> None:
    """Sends Impersonate-User, and one Impersonate-Group header per group (as kubectl --as/--as-group)."""
    if source.as_user:
        api.set_default_header("Impersonate-User", source.as_user)
    if source.as_groups:
        from urllib3 import HTTPHeaderDict
        plain, groups = api.rest_client.request, tuple(source.as_groups)

        def request(method, url, headers=None, **kwargs):
            merged = HTTPHeaderDict(headers or {})
            for group in groups:
                merged.add("Impersonate-Group", group)
            return plain(method, url, headers=merged, **kwargs)

        api.rest_client.request = request


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:300]


# --- requests ------------------------------------------------------------------------------


class _Forbidden(Exception):
    """A 403 for a list the answers can do without (LOST_WHEN_FORBIDDEN), outside --strict."""


class _Expired(Exception):
    """A 410 Gone for a list's continue token; `token` is the server's fresh token, if it sent one."""

    def __init__(self, token: str | None):
        self.token = token


class _Reader:
    """Sends GET requests with retries and turns every failure into one ClusterAccessError line."""

    def __init__(self, api: Any, source: LiveSource, server: str, note: Callable[[str], None]):
        self.api = api
        self.source = source
        self.server = server
        self.note = note
        self.timeout = source.request_timeout
        self.waited = 0.0
        self._apis: dict[str, Any] = {}
        self._progress = None

    # .. calls

    def _client(self, name: str) -> Any:
        if name not in self._apis:
            from kubernetes import client as k8s
            self._apis[name] = getattr(k8s, name)(self.api)
        return self._apis[name]

    def _list_call(self, res: Resource) -> Callable[..., Any]:
        ns = self.source.namespace if res.namespaced else None
        typed = _TYPED.get((res.api_version, res.plural))
        if typed:
            api_name, cluster_method, ns_method = typed
            api = self._client(api_name)
            if ns:
                return lambda **kw: getattr(api, ns_method)(ns, **kw)
            return getattr(api, cluster_method)
        custom = self._client("CustomObjectsApi")
        if ns:
            return lambda **kw: custom.list_namespaced_custom_object(res.group, res.version, ns, res.plural, **kw)
        return lambda **kw: custom.list_cluster_custom_object(res.group, res.version, res.plural, **kw)

    def version(self) -> str | None:
        """Returns the server's gitVersion (GET /version), or None (with a note) when it is not readable."""
        from kubernetes.client.exceptions import ApiException
        try:
            info = self._get(self._client("VersionApi").get_code, "get /version")
        except ApiException as err:
            if err.status in (403, 404):
                self.note(f"cannot read the server version (HTTP {err.status}): pass --kube-version to choose "
                          "the scheduler release")
                return None
            raise self._failure(err, "get /version", None) from None
        version = info.get("gitVersion") if isinstance(info, dict) else None
        return str(version) if version else None

    def list(self, res: Resource) -> list[dict] | None:
        """Returns every item of a list, paged; None for an optional resource the server does not serve."""
        from kubernetes.client.exceptions import ApiException
        call = self._list_call(res)
        scope = f'in the namespace "{self.source.namespace}"' if res.namespaced and self.source.namespace \
            else "at the cluster scope"
        what = f"list {res.label} {scope}"
        items: list[dict] = []
        token: str | None = None
        restarts = 0
        task = None
        for _ in range(MAX_PAGES):
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                kwargs["_continue"] = token
            try:
                page = self._get(call, what, **kwargs)
            except _Expired as expired:
                if expired.token:
                    self.note(f"{what}: the continue token expired; continued from a newer state of the cluster")
                    token = expired.token
                    continue
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise ClusterAccessError(f"{what}: the continue token expired {restarts} times; "
                                             "the list is too slow to read (try a larger --request-timeout)")
                items, token = [], None
                continue
            except ApiException as err:
                if err.status == 404 and res.optional:
                    return None
                if err.status == 403 and res.kind in LOST_WHEN_FORBIDDEN and not self.source.strict:
                    raise _Forbidden() from None
                raise self._failure(err, what, res) from None
            if not isinstance(page, dict) or not isinstance(page.get("items"), list):
                raise ClusterAccessError(f"{what}: the server's answer is not a list")
            kind = page.get("kind")
            kind = kind[: -len("List")] if isinstance(kind, str) and kind.endswith("List") and kind != "List" \
                else res.kind
            api_version = page.get("apiVersion") or res.api_version
            batch = page["items"]
            for item in batch:  # list items carry no kind/apiVersion: the list's, as typed lists in files
                item["kind"] = kind
                item["apiVersion"] = api_version
            items.extend(batch)
            meta = page.get("metadata") or {}
            next_token = meta.get("continue") or None
            if next_token and next_token == token:
                raise ClusterAccessError(f"{what}: the server sent the same continue token twice")
            task = self._advance(task, res, len(items), meta.get("remainingItemCount"), bool(next_token))
            token = next_token
            if not token:
                return items
        raise ClusterAccessError(f"{what}: more than {MAX_PAGES} pages")

    def _get(self, call: Callable[..., Any], what: str, **kwargs: Any) -> Any:
        """One GET with retries on 429/5xx, timeouts and dropped connections; returns the parsed JSON."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import (
            HTTPError, NewConnectionError, ProtocolError, ProxyError, ReadTimeoutError, SSLError,
            TimeoutError as Urllib3Timeout,
        )
        timeouts = 0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            last = attempt == MAX_ATTEMPTS
            try:
                resp = call(_preload_content=False, _request_timeout=self.timeout, **kwargs)
                try:
                    data = resp.data
                finally:
                    resp.release_conn()
                try:
                    return decode_json(data)
                except ValueError:
                    raise ClusterAccessError(f"{what}: the server's answer is not JSON "
                                             f"(is {self.server} a Kubernetes API server?)") from None
            except ApiException as err:
                if err.status == 410 and "_continue" in kwargs:
                    raise _Expired(_status_continue(err.body)) from None
                if err.status in RETRY_STATUS:
                    if not last and self._wait(_retry_after(err.headers) or _backoff(attempt)):
                        continue
                    raise ClusterAccessError(
                        f"{what}: the API server kept answering {err.status} {err.reason or ''}".rstrip()
                        + f" (gave up after {attempt} attempts, {self.waited:.0f}s of waiting)") from None
                raise
            except (NewConnectionError, ProxyError, SSLError) as err:
                raise ClusterAccessError(f"cannot reach the API server at {self.server}: {_reason(err)}") from None
            except (ReadTimeoutError, Urllib3Timeout):
                timeouts += 1
                if timeouts < MAX_TIMEOUTS and not last and self._wait(_backoff(attempt)):
                    continue
                raise ClusterAccessError(f"{what}: no answer from {self.server} within "
                                         f"{self.timeout:g}s ({timeouts} attempts; see --request-timeout)"
                                         ) from None
            except (ProtocolError, HTTPError) as err:
                if not last and self._wait(_backoff(attempt)):
                    continue
                raise ClusterAccessError(f"{what}: connection to {self.server} failed: {_reason(err)}") from None
        raise AssertionError("unreachable")

    def _wait(self, seconds: float) -> bool:
        """Sleeps before a retry if the run's retry budget allows it."""
        if self.waited + seconds > RETRY_BUDGET:
            return False
        self.waited += seconds
        _sleep(seconds)
        return True

    def _failure(self, err: Any, what: str, res: Resource | None) -> ClusterAccessError:
        """Turns an HTTP error into one line: forbidden names the missing RBAC verb and resource."""
        status = err.status
        if status == 401:
            return ClusterAccessError(f"unauthorized: the API server at {self.server} rejected the credentials "
                                      "(expired or invalid; log in again or refresh the kubeconfig)")
        if status == 403:
            need = ('RBAC verb "get" on the non-resource URL "/version"' if res is None
                    else f'RBAC verb "list" on {res.rbac}')
            return ClusterAccessError(f"forbidden: cannot {what} (needs {need})")
        if status == 0:
            return ClusterAccessError(f"cannot reach the API server at {self.server}: {_one_line(err.reason or '')}")
        message = _status_message(err.body)
        return ClusterAccessError(f"{what}: HTTP {status} {err.reason or ''}".rstrip()
                                  + (f": {message}" if message else ""))

    # .. progress

    def progress(self):
        """A context in which long lists show a Rich progress bar on stderr (only on a terminal)."""
        from contextlib import nullcontext
        show = self.source.progress
        if show is None:
            show = sys.stderr.isatty()
        if not show:
            return nullcontext()
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        self._progress = Progress(TextColumn("listing {task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        return self._progress

    def _advance(self, task: Any, res: Resource, done: int, remaining: Any, more: bool) -> Any:
        """Shows a list's progress once it needs a second page (shorter lists show nothing)."""
        if self._progress is None or (task is None and not more):
            return task
        total = (done + remaining if isinstance(remaining, int) else None) if more else done
        if task is None:
            task = self._progress.add_task(res.plural, total=total)
        self._progress.update(task, completed=done, total=total)
        return task


def _backoff(attempt: int) -> float:
    return min(MAX_BACKOFF, 0.5 * 2 ** (attempt - 1))


def _retry_after(headers: Any) -> float | None:
    """Returns Retry-After in seconds (delta-seconds form; capped), or None."""
    if not headers:
        return None
    value = headers.get("Retry-After")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return min(max(seconds, 0.0), 30.0) or 0.1


def _status(body: Any) -> dict:
    if not body:
        return {}
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return {}
    return status if isinstance(status, dict) else {}


def _status_continue(body: Any) -> str | None:
    return (_status(body).get("metadata") or {}).get("continue") or None


def _status_message(body: Any) -> str:
    message = _status(body).get("message")
    if message:
        return _one_line(message)
    text = _one_line(body) if isinstance(body, str) and body.strip() else ""
    return text[:200]


def _reason(err: BaseException) -> str:
    text = str(getattr(err, "reason", None) or err)
    match = re.search(r"\[Errno -?\d+\] ([^)'\"]+)", text)
    if match:
        return match.group(1).strip().lower() if "refused" in match.group(1).lower() else match.group(1).strip()
    return _one_line(text)
