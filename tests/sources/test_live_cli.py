"""`kplan snapshot` and `--live` through the real entry point, against the fake API server.

Done when: `kplan place` on a written snapshot gives the same JSON as `kplan place --live`, and
cluster access failures are one line with exit code 3.
"""
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fake_apiserver import FakeApiServer, write_kubeconfig
from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("hunter2", "managedFields", "last-applied-configuration", "DB_PASSWORD", "boot-secret")


def sample(name):
    return [o for o in yaml.safe_load_all((ROOT / "samples" / name).read_text()) if o]


def kplan(*args, home):
    return run_kplan(*args, columns=120, env={"HOME": str(home)}, timeout=120)


@pytest.fixture
def serve(tmp_path):
    """Starts a fake API server for some sample files; returns (server, kubeconfig path)."""
    servers = []

    def start(*samples, version="v1.35.2"):
        srv = FakeApiServer([o for s in samples for o in sample(s)], version=version).__enter__()
        servers.append(srv)
        return srv, write_kubeconfig(tmp_path / f"kubeconfig-{len(servers)}", srv.url)

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)


@pytest.mark.parametrize("out", ["cluster.json", "cluster.yaml.gz"])
def test_place_on_the_written_snapshot_equals_place_live(serve, tmp_path, out):
    srv, kc = serve("cluster.yaml")
    path = str(tmp_path / out)
    code, stdout, err = kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)
    assert code == 0 and stdout == "", err
    assert "kplan: wrote" in err and "6 nodes, 13 pods" in err
    pods = ["samples/pod-burstable.yaml", "samples/pod-gpu.yaml", "samples/pod-too-big.yaml"]
    live_code, live_out, _ = kplan("place", *pods, "--live", "--kubeconfig", kc, "-o", "json", home=tmp_path)
    file_code, file_out, _ = kplan("place", *pods, "-f", path, "-o", "json", home=tmp_path)
    assert live_code == file_code == 1 and live_out == file_out
    report = json.loads(live_out)
    assert report["kubeVersion"] == "1.35.2"  # the server's /version says v1.35.2
    assert [p["outcome"] for p in report["placements"]] == ["Scheduled", "Scheduled", "Unschedulable"]
    assert {r.method for r in srv.requests} == {"GET"}


def test_services_and_controllers_round_trip_for_default_spreading(serve, tmp_path):
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "shop"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}}
    srv = FakeApiServer(sample("cluster.yaml") + sample("topology/web-service.yaml") + [rs]).__enter__()
    try:
        kc = write_kubeconfig(tmp_path / "kubeconfig", srv.url)
        path = str(tmp_path / "c.json")
        code, _, err = kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)
        assert code == 0 and "1 services" in err and "1 replicasets" in err, err
        text = Path(path).read_text()
        assert not [s for s in SECRETS if s in text]
        kept = [o for o in json.loads(text)["items"] if o["kind"] in ("Service", "ReplicaSet")]
        assert [(o["apiVersion"], o["kind"], sorted(o["metadata"]), o["spec"]) for o in kept] == [
            ("v1", "Service", ["name", "namespace", "uid"], {"selector": {"app": "web"}}),
            ("apps/v1", "ReplicaSet", ["name", "namespace", "uid"], {"selector": {"matchLabels": {"app": "web"}}})]
        args = ("place", "samples/pod-burstable.yaml", "-o", "json", "--top", "0")
        live = kplan(*args, "--live", "--kubeconfig", kc, home=tmp_path)
        file = kplan(*args, "-f", path, home=tmp_path)
        assert live[0] == file[0] == 0 and live[1] == file[1]
        # web-new (app=web, no owner) is selected by the Service: the default constraints score it.
        scores = {n["name"]: n["scores"]["PodTopologySpread"]
                  for n in json.loads(live[1])["placements"][0]["nodes"] if n["feasible"]}
        assert scores == {"node-c1": 100, "node-c2": 100, "node-b1": 66, "node-a1": 66}
    finally:
        srv.__exit__(None, None, None)


def test_nodes_live_equals_nodes_on_the_snapshot(serve, tmp_path):
    _, kc = serve("cluster.yaml")
    path = str(tmp_path / "c.yaml")
    assert kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)[0] == 0
    live = kplan("nodes", "--live", "--kubeconfig", kc, "-o", "json", home=tmp_path)
    file = kplan("nodes", "-f", path, "-o", "json", home=tmp_path)
    assert live[0] == file[0] == 0 and live[1] == file[1] and len(json.loads(live[1])["nodes"]) == 6


def test_node_metrics_round_trip_for_load_aware_usage(serve, tmp_path):
    _, kc = serve("loadaware/cluster.yaml")
    path = str(tmp_path / "c.json")
    assert kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)[0] == 0
    args = ("--config", "samples/loadaware/scheduler-config.yaml", "--now", "2026-05-01T12:00:00Z", "-o", "json")
    live = kplan("nodes", "--usage", "--live", "--kubeconfig", kc, *args, home=tmp_path)
    file = kplan("nodes", "--usage", "-f", path, *args, home=tmp_path)
    assert live[0] == file[0] == 0 and live[1] == file[1]
    live = kplan("place", "samples/loadaware/pod-api.yaml", "--live", "--kubeconfig", kc, *args, home=tmp_path)
    file = kplan("place", "samples/loadaware/pod-api.yaml", "-f", path, *args, home=tmp_path)
    assert live[1] == file[1] and json.loads(live[1])["placements"][0]["outcome"] == "Scheduled"


def test_quota_status_live_equals_the_snapshot(serve, tmp_path):
    _, kc = serve("quota/story1/cluster.yaml")
    path = str(tmp_path / "c.json")
    assert kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)[0] == 0
    live = kplan("quota", "status", "-A", "--live", "--kubeconfig", kc, "-o", "json", home=tmp_path)
    file = kplan("quota", "status", "-A", "-f", path, "-o", "json", home=tmp_path)
    assert live[0] == file[0] == 0 and live[1] == file[1]
    assert len(json.loads(live[1])["quotas"]) == 2


def test_storage_objects_round_trip_without_their_secrets(tmp_path):
    # The storage sample, with what a real cluster adds to its objects: a class's parameters naming a
    # secret, a CSI volume's attributes and secret references, an RBD disk's keyring and user.
    objects = [o for doc in sample("storage/cluster.yaml") for o in (doc["items"] if doc["kind"] == "List" else [doc])]
    for obj in objects:
        if obj["kind"] == "StorageClass":
            obj["parameters"] = {"csi.storage.k8s.io/provisioner-secret-name": "hunter2-provisioner"}
        if obj["kind"] == "PersistentVolume" and obj["metadata"]["name"] == "pvc-0003":
            obj["spec"]["csi"].update({"volumeAttributes": {"token": "hunter2-attributes"},
                                       "nodePublishSecretRef": {"name": "hunter2-node-publish"}})
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rbd-user", "namespace": "shop"},
                    "spec": {"nodeName": "node-b1", "containers": [{"name": "c", "image": "x"}],
                             "volumes": [{"name": "disk", "rbd": {"monitors": ["10.0.0.1:6789"], "image": "img",
                                                                  "pool": "rbd", "keyring": "/etc/hunter2-keyring",
                                                                  "user": "hunter2-user"}}]}})
    with FakeApiServer(objects, version="v1.34.2") as srv:
        kc = write_kubeconfig(tmp_path / "kubeconfig", srv.url)
        path = str(tmp_path / "storage.json")
        code, _, err = kplan("snapshot", "--kubeconfig", kc, "--out", path, home=tmp_path)
        assert code == 0, err
        assert "4 persistentvolumeclaims" in err and "28 persistentvolumes" in err and "24 volumeattachments" in err, err
        text = Path(path).read_text()
        assert "hunter2" not in text and "volumeAttributes" not in text and "parameters" not in text
        live = kplan("pending", "-n", "shop", "--live", "--kubeconfig", kc, "-o", "json", home=tmp_path)
        file = kplan("pending", "-n", "shop", "-f", path, "-o", "json", home=tmp_path)
    check = kplan("check", "samples/storage/cache.yaml", "-f", path, "-o", "json", home=tmp_path)
    assert live[0] == file[0] == 1 and live[1] == file[1]
    assert check[0] == 1
    (pod,) = json.loads(live[1])["pods"]
    # db-2's claim pins it to zone-a, whose two nodes are 500m short; node-c2 is at its 25 EBS volumes.
    assert pod["pod"] == "shop/db-2" and pod["agreesWithRecorded"] is True
    assert pod["placement"]["volumes"] == [{"claim": "data-db-2", "status": "Bound", "storageClass": "gp3",
                                            "bindingMode": "WaitForFirstConsumer", "volume": "pvc-0003",
                                            "zone": "zone-a",
                                            "nodeAffinity": "topology.ebs.csi.aws.com/zone in (zone-a)"}]
    (cache,) = json.loads(check[1])["workloads"]
    assert (cache["placed"], cache["firstFailure"]["pod"]) == (2, "shop/cache-2")


def test_snapshot_to_stdout_is_redacted_yaml_with_a_header(serve, tmp_path):
    _, kc = serve("cluster.yaml")
    code, out, err = kplan("snapshot", "--kubeconfig", kc, "-o", "yaml", home=tmp_path)
    assert code == 0, err
    assert not [s for s in SECRETS if s in out]
    docs = list(yaml.safe_load_all(out))
    header = docs[0]
    assert header["kind"] == "KplanSnapshot" and header["apiVersion"] == "kplan/v1alpha1"
    assert set(header["metadata"]) == {"context", "server", "kubeVersion", "takenAt", "seconds", "counts"}
    assert header["metadata"]["kubeVersion"] == "v1.35.2" and header["metadata"]["context"] == "fake"
    assert not any(c.get("env") for d in docs[1:] if d["kind"] == "Pod" for c in d["spec"]["containers"])


def test_server_version_chooses_the_simulated_release(serve, tmp_path):
    _, kc = serve("cluster.yaml", version="v1.34.3")
    base = ("place", "samples/pod-burstable.yaml", "--live", "--kubeconfig", kc, "-o", "json")
    assert json.loads(kplan(*base, home=tmp_path)[1])["kubeVersion"] == "1.34.3"  # patch and all
    assert json.loads(kplan(*base, "--kube-version", "1.36", home=tmp_path)[1])["kubeVersion"] == "1.36"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case,message", [
    ("connection-refused", "kplan: error: cannot reach the API server at http://127.0.0.1:{port}: connection refused"),
    ("bad-kubeconfig", "kplan: error: kubeconfig {kc}: malformed YAML at line 2, column 1: expected the node "
                       "content, but found '<stream end>'"),
    ("unknown-context", 'kplan: error: context "prod" not found in kubeconfig {kc} (contexts: fake)'),
    ("expired-credentials", "kplan: error: unauthorized: the API server at {url} rejected the credentials "
                            "(expired or invalid; log in again or refresh the kubeconfig)"),
    ("forbidden", 'kplan: error: forbidden: cannot list pods at the cluster scope (needs RBAC verb "list" on "pods")'),
])
@pytest.mark.parametrize("command", [("snapshot",), ("place", "samples/pod-burstable.yaml", "--live")],
                         ids=["snapshot", "place-live"])
def test_cluster_access_failures_are_one_line_and_exit_3(serve, tmp_path, case, message, command):
    srv, kc = serve("cluster.yaml")
    port = closed_port()
    extra = []
    if case == "connection-refused":
        kc = write_kubeconfig(tmp_path / "refused.yaml", f"http://127.0.0.1:{port}")
    elif case == "bad-kubeconfig":
        Path(kc).write_text("clusters: [\n")
    elif case == "unknown-context":
        extra = ["--context", "prod"]
    elif case == "expired-credentials":
        kc = write_kubeconfig(tmp_path / "expired.yaml", srv.url, token="expired-token")
    else:
        srv.forbidden.add("/api/v1/pods")
    code, out, err = kplan(*command, "--kubeconfig", kc, *extra, home=tmp_path)
    assert code == 3 and out == ""
    assert err == message.format(port=port, kc=kc, url=srv.url) + "\n"


@pytest.mark.parametrize("args,message", [
    (("place", "samples/pod-burstable.yaml", "--live", "-f", "samples/cluster.yaml"),
     "--live and --snapshot exclude each other"),
    (("nodes", "--context", "prod"), "--context goes with --live"),
    (("place", "samples/pod-burstable.yaml", "--live", "--request-timeout", "soon"),
     "--request-timeout 'soon': not a duration"),
    (("snapshot", "--out", "c.json", "-o", "yaml"), "-o yaml does not match the extension of --out c.json"),
])
def test_option_mistakes_exit_2(tmp_path, args, message):
    code, _, err = kplan(*args, home=tmp_path)
    assert code == 2 and message in err and err.count("\n") == 1


def test_offline_commands_never_import_the_kubernetes_client():
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from kplan.cli.app import app\n"
        "r = CliRunner().invoke(app, ['place', 'samples/pod-burstable.yaml', '-f', 'samples/cluster.yaml',\n"
        "                             '-o', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "r = CliRunner().invoke(app, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "loaded = sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.'))\n"
        "assert not loaded, loaded\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_html_page_header_names_the_live_cluster_and_the_time_it_was_read(serve, tmp_path):
    from html_page import parse
    srv, kc = serve("cluster.yaml")
    page = tmp_path / "report.html"
    code, _, err = kplan("place", "samples/pod-burstable.yaml", "--live", "--kubeconfig", kc, "--html", str(page),
                         home=tmp_path)
    assert code == 0, err
    root = parse(page.read_text(encoding="utf-8"))
    facts = dict(zip((dt.text() for dt in root.find_all("dt")), (dd.text() for dd in root.find_all("dd"))))
    assert facts["Snapshot"] == "read live"
    assert srv.url in facts["Cluster"]
    assert facts["Taken at"].endswith("Z")
    assert facts["Objects"] == "6 nodes, 13 pods, 4 namespaces"
    assert facts["kube-scheduler"] == "1.35.2, from the snapshot's server version"
