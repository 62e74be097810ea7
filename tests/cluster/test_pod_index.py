"""PodIndex: built lazily from the node table, kept current by ClusterState.assume/forget."""
from __future__ import annotations

import numpy as np
from builders import cluster
from topology_builders import N, P, affinity, term

from kplan.api.label_selectors import parse_selector
from kplan.api.objects import Pod
from kplan.cluster.pod_index import REQUIRED_ANTI_AFFINITY, PodIndex, pod_affinity_terms

APP_WEB = parse_selector({"matchLabels": {"app": "web"}})


def test_index_follows_assume_and_forget():
    c = cluster([N("a", zone="z1"), N("b", zone="z2")], [P("w1", "a", app="web"), P("x1", "b", app="api")])
    assert c.pod_index is None  # nothing built until a plugin asks
    index = PodIndex.of(c)
    assert index.per_node(index.selector_mask(APP_WEB)).tolist() == [1, 0]
    extra = [Pod(P(f"w{k}", app="web")) for k in range(2, 40)]  # enough to grow the columns
    for pod in extra:
        c.assume(pod, 1)
    assert index.per_node(index.selector_mask(APP_WEB)).tolist() == [1, 38]
    c.forget(extra[0], 1)
    assert index.per_node(index.selector_mask(APP_WEB)).tolist() == [1, 37]
    assert PodIndex.of(c) is index


def test_existing_terms_are_interned_and_updated():
    anti = affinity(anti=[term("app", "In", ["web"], "kubernetes.io/hostname")])
    c = cluster([N("a"), N("b")], [P(f"w{k}", "a", app="web", affinity=anti) for k in range(5)])
    index = PodIndex.of(c)
    table = index.tables()[REQUIRED_ANTI_AFFINITY]
    assert len(table.terms) == 1 and len(table.slots) == 5  # five replicas, one distinct term
    c.assume(Pod(P("w9", app="web", affinity=anti)), 1)
    assert index.existing_terms_per_node(REQUIRED_ANTI_AFFINITY, np.array([True])).tolist() == [5, 1]


def test_match_label_keys_and_mismatch_label_keys_are_merged():
    t = term("app", "Exists", None, "zone", matchLabelKeys=["version"], mismatchLabelKeys=["team"])
    pod = Pod(P("p", app="web", version="v2", team="blue", affinity=affinity(required=[t])))
    (parsed,) = pod_affinity_terms(pod)["requiredAffinity"]
    assert parsed.selector.matches({"app": "web", "version": "v2", "team": "red"})
    assert not parsed.selector.matches({"app": "web", "version": "v1", "team": "red"})
    assert not parsed.selector.matches({"app": "web", "version": "v2", "team": "blue"})


def test_terms_of_distinct_affinities_are_interned_apart():
    """Pods sharing a parse share its interned term ids; a different affinity gets its own."""
    anti = affinity(anti=[term("app", "In", ["web"], "kubernetes.io/hostname")])
    both = affinity(anti=[term("app", "In", ["web"], "kubernetes.io/hostname"), term("app", "In", ["db"], "zone")])
    c = cluster([N("a"), N("b")], [P("w1", "a", app="web", affinity=anti), P("w2", "b", app="web", affinity=both),
                                   P("w3", "b", app="web", affinity=anti)])
    table = PodIndex.of(c).tables()[REQUIRED_ANTI_AFFINITY]
    assert len(table.terms) == 2 and table.ids == [0, 0, 1, 0]
    assert PodIndex.of(c).existing_terms_per_node(REQUIRED_ANTI_AFFINITY, np.array([True, False])).tolist() == [1, 2]


def test_term_counts_follow_assume_and_forget():
    # Kept per term across cycles: each answer equals a fresh count over every pod.
    from kplan.api.label_selectors import NOTHING
    from kplan.cluster.pod_index import AffinityTerm
    c = cluster([N("a", zone="z1"), N("b", zone="z2")], [P("w1", "a", app="web"), P("x1", "b", app="api")])
    index = PodIndex.of(c)
    web = AffinityTerm(frozenset({"default"}), NOTHING, APP_WEB, "kubernetes.io/hostname")
    elsewhere = AffinityTerm(frozenset({"other"}), NOTHING, APP_WEB, "kubernetes.io/hostname")

    def fresh(t):
        return index.per_node(index.term_mask(t, {})).tolist()

    assert index.term_counts(web, {}).tolist() == fresh(web) == [1, 0]
    added = [Pod(P(f"w{k}", app="web")) for k in range(2, 5)] + [Pod(P("x2", app="api"))]
    for pod in added:
        c.assume(pod, 1)
    assert index.term_counts(web, {}).tolist() == fresh(web) == [1, 3]
    assert index.term_counts(elsewhere, {}).tolist() == fresh(elsewhere) == [0, 0]
    counts = index.term_counts(web, {})
    counts[0] = 99  # callers get a copy
    c.forget(added[0], 1)
    assert index.term_counts(web, {}).tolist() == fresh(web) == [1, 2]


def test_existing_terms_per_node_follow_assume_and_forget():
    # Kept per question across cycles: each answer equals the count of an index built afresh.
    anti = affinity(anti=[term("app", "In", ["web"], "kubernetes.io/hostname"), term("app", "In", ["db"], "zone")])
    c = cluster([N("a"), N("b"), N("c")], [P(f"w{k}", "abc"[k % 3], app="web", affinity=anti) for k in range(4)])
    index = PodIndex.of(c)
    matched = np.array([True, False])

    def fresh():
        return PodIndex(c).existing_terms_per_node(REQUIRED_ANTI_AFFINITY, matched).tolist()

    assert index.existing_terms_per_node(REQUIRED_ANTI_AFFINITY, matched).tolist() == fresh() == [2, 1, 1]
    added = [Pod(P(f"n{k}", app="web", affinity=anti)) for k in range(3)]
    for pod in added:
        c.assume(pod, 2)
    assert index.existing_terms_per_node(REQUIRED_ANTI_AFFINITY, matched).tolist() == fresh() == [2, 1, 4]
    c.forget(added[1], 2)
    assert index.existing_terms_per_node(REQUIRED_ANTI_AFFINITY, matched).tolist() == fresh() == [2, 1, 3]
    assert not index.existing_terms_per_node(REQUIRED_ANTI_AFFINITY, matched).flags.writeable
