"""A read-only role that may not list some kinds, against the tests' API server: each kind kplan can do
without (LOST_WHEN_FORBIDDEN) is left out with a warning saying what the answers lack, recorded in the
snapshot header and in the reports; --strict makes the refusal exit 3; nodes and pods stay required."""
import json

import pytest
import yaml

from fake_apiserver import FakeApiServer, write_kubeconfig
from kplan.errors import ClusterAccessError
from kplan.sources.live import LOST_WHEN_FORBIDDEN, RESOURCES, LiveSource, fetch
from run_kplan import ROOT, run_kplan

CLUSTER = [o for o in yaml.safe_load_all((ROOT / "samples" / "cluster.yaml").read_text()) if o]


def list_path(res) -> str:
    return f"/api/{res.api_version}/{res.plural}" if not res.group else f"/apis/{res.api_version}/{res.plural}"


def refused(kind: str) -> tuple[list[str], list[str]]:
    """The lists of a kind, in all its API groups and versions: (resource labels, list paths)."""
    lists = [res for res in RESOURCES if res.kind == kind]
    return list(dict.fromkeys(res.label for res in lists)), [list_path(res) for res in lists]


@pytest.fixture
def cluster(tmp_path):
    """The sample cluster served by the test API server; yields (server, kubeconfig)."""
    with FakeApiServer(CLUSTER) as srv:
        yield srv, write_kubeconfig(tmp_path / "kubeconfig", srv.url)


def kplan(*args, home):
    return run_kplan(*args, env={"HOME": str(home)}, timeout=120)


@pytest.mark.parametrize("kind", list(LOST_WHEN_FORBIDDEN))
def test_a_forbidden_kind_is_left_out_and_said(cluster, tmp_path, kind):
    srv, kc = cluster
    labels, paths = refused(kind)
    srv.forbidden.update(paths)
    out = tmp_path / "snap.json"
    code, _, err = kplan("snapshot", "--kubeconfig", kc, "--out", str(out), home=tmp_path)
    assert code == 0, err
    lost = LOST_WHEN_FORBIDDEN[kind]
    for label in labels:
        assert f"kplan: warning: {label} forbidden: {lost}\n" in err
    assert f"does not serve {kind} " not in err  # refused, not missing
    header = json.loads(out.read_text())["items"][0]
    assert header["kind"] == "KplanSnapshot" and header["metadata"]["forbidden"] == dict.fromkeys(labels, lost)
    assert "forbidden" not in header["metadata"]["counts"] and all(
        o["kind"] != kind for o in json.loads(out.read_text())["items"])


def test_services_forbidden_through_every_path(cluster, tmp_path):
    srv, kc = cluster
    srv.forbidden.add("/api/v1/services")
    warning = "kplan: warning: services forbidden: default topology spreading uses controllers only"
    forbidden = {"services": "default topology spreading uses controllers only"}
    code, out, err = kplan("place", "samples/pod-burstable.yaml", "--live", "--kubeconfig", kc, "-o", "json",
                           home=tmp_path)
    assert code == 0 and warning in err.splitlines() and json.loads(out)["forbidden"] == forbidden
    snap = tmp_path / "snap.json"
    assert kplan("snapshot", "--kubeconfig", kc, "--out", str(snap), home=tmp_path)[0] == 0
    for args in (["place", "samples/pod-burstable.yaml"], ["quota", "status"], ["nodes"],
                 ["check", "samples/check/apps.yaml"], ["pending", "-A"]):
        code, out, err = kplan(*args, "-f", str(snap), "-o", "json", home=tmp_path)
        assert code == 0 and warning in err.splitlines(), (args, err)
        assert json.loads(out)["forbidden"] == forbidden, args
    page = tmp_path / "page.html"
    assert kplan("place", "samples/pod-burstable.yaml", "-f", str(snap), "--html", str(page), home=tmp_path)[0] == 0
    assert "services: default topology spreading uses controllers only" in page.read_text()
    code, out, err = kplan("place", "samples/pod-burstable.yaml", "--live", "--kubeconfig", kc, "--strict",
                           home=tmp_path)
    assert code == 3 and err.strip() == ('kplan: error: forbidden: cannot list services at the cluster scope '
                                         '(needs RBAC verb "list" on "services")')


@pytest.mark.parametrize("kind", list(LOST_WHEN_FORBIDDEN))
def test_strict_makes_it_fail(cluster, kind):
    srv, kc = cluster
    srv.forbidden.update(refused(kind)[1])
    first = next(res for res in RESOURCES if res.kind == kind)
    with pytest.raises(ClusterAccessError) as info:
        fetch(LiveSource(kubeconfig=kc, strict=True, progress=False), note=[].append)
    assert str(info.value) == (f"forbidden: cannot list {first.label} at the cluster scope (needs RBAC verb "
                               f'"list" on {first.rbac})')
    dump = fetch(LiveSource(kubeconfig=kc, progress=False), note=[].append)
    assert dump.header["forbidden"] == dict.fromkeys(refused(kind)[0], LOST_WHEN_FORBIDDEN[kind])


@pytest.mark.parametrize("path, what", [("/api/v1/nodes", "nodes"), ("/api/v1/pods", "pods")])
def test_nodes_and_pods_stay_required(cluster, tmp_path, path, what):
    srv, kc = cluster
    srv.forbidden.add(path)
    code, _, err = kplan("snapshot", "--kubeconfig", kc, home=tmp_path)
    assert code == 3 and err.strip().endswith(f'kplan: error: forbidden: cannot list {what} at the cluster scope '
                                              f'(needs RBAC verb "list" on "{what}")'), err


def test_strict_goes_with_live(tmp_path):
    code, _, err = kplan("place", "samples/pod-burstable.yaml", "-f", "samples/cluster.yaml", "--strict",
                         home=tmp_path)
    assert code == 2 and err.strip() == ("kplan: error: --strict goes with --live (or write a file with "
                                         "`kplan snapshot`)")
