"""A small Kubernetes API server for tests: serves list responses on 127.0.0.1 from given objects.

The objects are "recorded" as an API server returns them: uid, resourceVersion, managedFields,
kubectl's last-applied annotation, and for pods env values, commands, secret volumes and status
details, for controllers a pod template with such secrets; list items carry no kind/apiVersion. Lists honour `limit` and `continue`. Behaviours
for the tests: a 403 for some paths, 404 for custom resources not served, a 410 for a
continue token (with or without a fresh token in the Status), a slow first reply, 429s with
Retry-After, 5xx, and 401 for a wrong bearer token. Every request is recorded.
"""
from __future__ import annotations

import base64
import copy
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import yaml

TOKEN = "t0k3n-valid"
# kind -> (apiVersion path prefix, plural)
PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "Service": ("/api/v1", "services", True),
    "ReplicationController": ("/api/v1", "replicationcontrollers", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "HorizontalPodAutoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers", True),
    "ElasticQuota": (None, "elasticquotas", True),  # prefix from the object's apiVersion
    "NodeMetric": ("/apis/slo.koordinator.sh/v1alpha1", "nodemetrics", False),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "CSIDriver": ("/apis/storage.k8s.io/v1", "csidrivers", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    "VolumeAttachment": ("/apis/storage.k8s.io/v1", "volumeattachments", False),
    # DRA kinds: the prefix from the object's apiVersion (a 1.34 server serves v1, a 1.32 one v1beta1).
    "DeviceClass": (None, "deviceclasses", False),
    "ResourceSlice": (None, "resourceslices", False),
    "ResourceClaim": (None, "resourceclaims", True),
    "ResourceClaimTemplate": (None, "resourceclaimtemplates", True),
}

BUILT_IN = {"/api/v1/namespaces", "/api/v1/nodes", "/api/v1/pods", "/apis/scheduling.k8s.io/v1/priorityclasses",
            "/apis/policy/v1/poddisruptionbudgets", "/api/v1/services", "/api/v1/replicationcontrollers",
            "/apis/apps/v1/replicasets", "/apis/apps/v1/statefulsets", "/apis/apps/v1/deployments",
            "/apis/apps/v1/daemonsets", "/apis/autoscaling/v2/horizontalpodautoscalers", "/api/v1/persistentvolumeclaims",
            "/api/v1/persistentvolumes", "/apis/storage.k8s.io/v1/storageclasses", "/apis/storage.k8s.io/v1/csinodes",
            "/apis/storage.k8s.io/v1/csidrivers", "/apis/storage.k8s.io/v1/csistoragecapacities",
            "/apis/storage.k8s.io/v1/volumeattachments"} | {
    f"/apis/resource.k8s.io/v1/{plural}" for plural in ("deviceclasses", "resourceslices", "resourceclaims",
                                                         "resourceclaimtemplates")}


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict
    groups: list


def recorded(obj: dict, n: int) -> dict:
    """Returns the object as an API server would serve it, with the fields a snapshot must drop."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("uid", f"uid-{n:05d}")
    meta.setdefault("resourceVersion", str(1000 + n))
    meta.setdefault("creationTimestamp", "2026-11-01T09:00:00Z")
    meta["managedFields"] = [{"manager": "kubectl-client-side-apply", "operation": "Update",
                              "apiVersion": obj.get("apiVersion", "v1"), "fieldsType": "FieldsV1",
                              "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]
    annotations = meta.setdefault("annotations", {})
    annotations["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
        {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": {"name": meta.get("name")},
         "stringData": {"password": "hunter2-last-applied"}})
    if obj.get("kind") == "Pod":
        spec = obj.setdefault("spec", {})
        for c in spec.get("containers") or ():
            c["env"] = [{"name": "DB_PASSWORD", "value": "hunter2-env"},
                        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "db", "key": "token"}}}]
            c["command"] = ["/bin/server", "--password=hunter2-command"]
            c["args"] = ["--api-key=hunter2-args"]
            c["volumeMounts"] = [{"name": "creds", "mountPath": "/etc/creds"}]
            c["terminationMessagePath"] = "/dev/termination-log"
        spec["volumes"] = [{"name": "creds", "secret": {"secretName": "db-hunter2-secret"}},
                           *(spec.get("volumes") or [{"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}])]
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Running" if spec.get("nodeName") else "Pending")
        status["podIP"] = "10.0.0.7"
        status["hostIP"] = "192.168.0.7"
        status["containerStatuses"] = [{"name": c.get("name", "main"), "image": c.get("image", ""),
                                        "imageID": "sha256:abc", "ready": True, "restartCount": 0,
                                        "state": {"running": {"startedAt": "2026-11-01T09:01:00Z"}}}
                                       for c in spec.get("containers") or ()]
    if obj.get("kind") in ("ReplicaSet", "StatefulSet", "ReplicationController", "Deployment", "DaemonSet"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("template", {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [
            {"name": "main", "image": "registry.example/app:1",
             "env": [{"name": "DB_PASSWORD", "value": "hunter2-template-env"}],
             "command": ["/bin/server", "--password=hunter2-template-command"]}]}})
        obj.setdefault("status", {"replicas": 1, "readyReplicas": 1})
    if obj.get("kind") == "Service":
        obj.setdefault("spec", {}).setdefault("clusterIP", "10.96.0.10")
        obj["spec"].setdefault("ports", [{"port": 80, "targetPort": 8080}])
    if obj.get("kind") == "Node":
        status = obj.setdefault("status", {})
        status["addresses"] = [{"type": "InternalIP", "address": "192.168.0.7"}]
        status["nodeInfo"] = {"kubeletVersion": "v1.35.2", "bootID": "boot-secret-id"}
    return obj


class FakeApiServer:
    """Serves `objects` as a Kubernetes API server on 127.0.0.1 (an ephemeral port) in a thread."""

    def __init__(self, objects, version: str = "v1.35.2", token: str = TOKEN):
        self.version = version
        self.token = token
        self.lists: dict[str, tuple[str, str, list]] = {}  # cluster-wide list path -> (apiVersion, kind, items)
        self.requests: list[Request] = []
        self.forbidden: set[str] = set()  # paths answering 403
        self.not_served: set[str] = set()  # paths answering 404 (a custom resource the cluster lacks)
        self.expire: dict[str, str | None] = {}  # path -> None (410 without a token) or "fresh" (410 with one)
        self.slow: dict[str, float] = {}  # path -> seconds the first reply to it waits
        self.throttle: dict[str, int] = {}  # path -> number of 429s (Retry-After: 1) before answering
        self.failing: dict[str, int] = {}  # path -> number of 503s before answering
        self.version_status: int | None = None  # answer /version with this status instead
        self._lock = threading.Lock()
        for n, obj in enumerate(objects):
            self.add(recorded(obj, n))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def add(self, obj: dict) -> None:
        kind, api_version = obj["kind"], obj["apiVersion"]
        prefix, plural, _ = PATHS[kind]
        prefix = prefix or f"/apis/{api_version}"
        item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        self.lists.setdefault(f"{prefix}/{plural}", (api_version, kind, []))[2].append(item)

    def __enter__(self) -> "FakeApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]

    # .. answering

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _record(self) -> tuple[str, dict]:
                split = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(split.query).items()}
                with server._lock:
                    server.requests.append(Request(self.command, split.path, query, dict(self.headers),
                                                   self.headers.get_all("Impersonate-Group") or []))
                return split.path, query

            def _send(self, status: int, body, headers: dict | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json" if not isinstance(body, bytes)
                                     else "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                path, query = self._record()
                server._answer(self, path, query)

            def _refuse(self) -> None:
                self._record()
                self._send(405, _status(405, "MethodNotAllowed", "kplan must only read"))

            do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _refuse

        return Handler

    def _once(self, table: dict, path: str) -> bool:
        with self._lock:
            left = table.get(path, 0)
            if left:
                table[path] = left - 1
            return bool(left)

    def _answer(self, h, path: str, query: dict) -> None:
        if h.headers.get("Authorization") != f"Bearer {self.token}":
            return h._send(401, _status(401, "Unauthorized", "Unauthorized"))
        delay = self.slow.pop(path, 0) if path in self.slow else 0
        if delay:
            time.sleep(delay)
        if self._once(self.throttle, path):
            return h._send(429, _status(429, "TooManyRequests", "the server has received too many requests"),
                           {"Retry-After": "1"})
        if self._once(self.failing, path):
            return h._send(503, _status(503, "ServiceUnavailable", "etcd leader changed"))
        if path.rstrip("/") == "/version":
            if self.version_status:
                return h._send(self.version_status, _status(self.version_status, "Forbidden", "no"))
            major, minor = self.version.lstrip("v").split(".")[:2]
            return h._send(200, {"major": major, "minor": minor, "gitVersion": self.version,
                                 "platform": "linux/amd64"})
        if path in self.forbidden:
            plural = path.rsplit("/", 1)[1]
            return h._send(403, _status(403, "Forbidden", f'{plural} is forbidden: User "dev" cannot list '
                                                          f'resource "{plural}" at the cluster scope'))
        list_path, namespace = path, None
        parts = path.split("/")
        if "namespaces" in parts[:-1] and parts.index("namespaces") == len(parts) - 3:
            namespace = parts[-2]
            list_path = "/".join(parts[:-3] + parts[-1:])
        served = list_path in self.lists or list_path in BUILT_IN
        if not served or path in self.not_served or list_path in self.not_served:
            return h._send(404, b"404 page not found\n")
        api_version, kind, items = self.lists.get(
            list_path, (list_path.split("/", 2)[2].rsplit("/", 1)[0], _kind_of(list_path), []))
        if namespace is not None:
            items = [i for i in items if (i.get("metadata") or {}).get("namespace", "default") == namespace]
        token = query.get("continue")
        start = 0
        if token:
            mode = self.expire.pop(list_path, "absent")
            if mode != "absent":
                body = _status(410, "Expired", "The provided continue parameter is too old")
                if mode:
                    body["metadata"] = {"continue": _token(json.loads(base64.b64decode(token))["start"])}
                return h._send(410, body)
            start = json.loads(base64.b64decode(token))["start"]
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start:start + limit]
        meta = {"resourceVersion": "424242"}
        if start + limit < len(items):
            meta["continue"] = _token(start + limit)
            meta["remainingItemCount"] = len(items) - start - limit
        h._send(200, {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta, "items": page})


def _token(start: int) -> str:
    return base64.b64encode(json.dumps({"start": start, "rv": 424242}).encode()).decode()


def _kind_of(list_path: str) -> str:
    plural = list_path.rsplit("/", 1)[1]
    return {v[1]: k for k, v in PATHS.items()}.get(plural, "Unknown")


def _status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def write_kubeconfig(path, server: str, token: str = TOKEN, contexts=("fake",), current: str | None = "fake"):
    """Writes a kubeconfig whose contexts all point at `server` with a bearer token."""
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "fake-cluster", "cluster": {"server": server}}],
        "users": [{"name": "dev", "user": {"token": token}}],
        "contexts": [{"name": c, "context": {"cluster": "fake-cluster", "user": "dev"}} for c in contexts],
    }
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return str(path)
