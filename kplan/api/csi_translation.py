"""In-tree volume types as the CSI drivers that took them over (k8s.io/csi-translation-lib).

kube-scheduler translates an in-tree volume (awsElasticBlockStore, gcePersistentDisk, ...) to its
CSI driver where migration is on, so NodeVolumeLimits counts it against that driver's limit and
VolumeBinding reads the node affinity the CSI driver's topology key gives it.

- NodeVolumeLimits (isCSIMigrationOn): on for AWS EBS, GCE PD, Azure Disk and Cinder wherever the
  node has a CSINode; Portworx also needs the plugin in the CSINode's migrated-plugins annotation;
  off for the other in-tree types (Azure File, vSphere), which are then not counted.
- VolumeBinding (tryTranslatePVToCSI): a PV of AWS EBS, GCE PD, Azure Disk, Cinder or Portworx is
  translated on a node whose CSINode lists the plugin in that annotation.
"""
from __future__ import annotations

from typing import Mapping

from kplan.api.storage import CSINode, PersistentVolume, Source

AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX = (
    "kubernetes.io/aws-ebs", "kubernetes.io/gce-pd", "kubernetes.io/azure-disk", "kubernetes.io/cinder",
    "kubernetes.io/portworx-volume")
# In-tree plugin -> the CSI driver it migrated to (GetCSINameFromInTreeName).
CSI_DRIVERS = {
    AWS_EBS: "ebs.csi.aws.com",
    GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com",
    CINDER: "cinder.csi.openstack.org",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    PORTWORX: "pxd.portworx.com",
}
# The topology key each driver's translated node affinity uses for the zone.
ZONE_KEYS = {
    AWS_EBS: "topology.ebs.csi.aws.com/zone",
    GCE_PD: "topology.gke.io/zone",
    AZURE_DISK: "topology.disk.csi.azure.com/zone",
    CINDER: "topology.cinder.csi.openstack.org/zone",
}
ALWAYS_MIGRATED = (AWS_EBS, GCE_PD, AZURE_DISK, CINDER)  # isCSIMigrationOn's GA plugins
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
BETA_REGION, GA_REGION = "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"
UNSPECIFIED = "UNSPECIFIED"


def counts_on(plugin: str, csi_node: CSINode | None) -> bool:
    """isCSIMigrationOn (NodeVolumeLimits): whether volumes of an in-tree plugin count as its CSI
    driver's on a node with this CSINode."""
    if csi_node is None or not plugin:
        return False
    if plugin in ALWAYS_MIGRATED:
        return True
    return plugin == PORTWORX and plugin in csi_node.migrated_plugins


def migrated_on(plugin: str, csi_node: CSINode | None) -> bool:
    """isPluginMigratedToCSIOnNode (VolumeBinding): the CSINode lists the plugin as migrated."""
    return (csi_node is not None and plugin in (*ALWAYS_MIGRATED, PORTWORX)
            and plugin in csi_node.migrated_plugins)


def _ebs_volume_id(kubernetes_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: aws://<zone>/vol-123 -> vol-123; a bare id stays."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    return kubernetes_id[len("aws://"):].split("/", 1)[-1].strip("/")


def csi_handle(source: Source) -> tuple[str, str]:
    """The (driver, volume handle) a translated in-tree volume has (TranslateInTreePVToCSI and
    TranslateInTreeInlineVolumeToCSI); ("", "") for a type without a driver."""
    driver = CSI_DRIVERS.get(source.in_tree, "")
    if not driver:
        return "", ""
    if source.in_tree == AWS_EBS:
        return driver, _ebs_volume_id(source.in_tree_id)
    if source.in_tree == GCE_PD:
        zones = [z for z in source.zone.split("__") if z]
        if len(zones) > 1:
            region = zones[0].rsplit("-", 1)[0]
            return driver, f"projects/{UNSPECIFIED}/regions/{region}/disks/{source.in_tree_id}"
        zone = zones[0] if zones else UNSPECIFIED
        return driver, f"projects/{UNSPECIFIED}/zones/{zone}/disks/{source.in_tree_id}"
    return driver, source.in_tree_id


def translated_affinity(pv: PersistentVolume) -> list[Mapping] | None:
    """The node affinity of an in-tree PV after translation (translateTopologyFromInTreeToCSI): zone
    requirements move to the CSI driver's topology key, or, with none, the PV's zone labels become
    one; a beta region requirement becomes the GA one."""
    key = ZONE_KEYS.get(pv.source.in_tree)
    if key is None:
        return pv.node_affinity
    terms = [dict(t) for t in pv.node_affinity or ()]
    has_zone = any(req.get("key") in ZONE_LABELS for t in terms for req in t.get("matchExpressions") or ())

    def renamed(req: Mapping) -> Mapping:
        if has_zone and req.get("key") in ZONE_LABELS:
            return {**req, "key": key}
        if req.get("key") == BETA_REGION:
            return {**req, "key": GA_REGION}
        return req

    terms = [{**t, "matchExpressions": [renamed(r) for r in t.get("matchExpressions") or ()]} for t in terms]
    if not has_zone:
        label = next((pv.labels[k] for k in ZONE_LABELS if k in pv.labels), "")
        zones = [z for z in label.split("__") if z]
        if zones:
            zone_req = {"key": key, "operator": "In", "values": zones}
            terms = ([{**t, "matchExpressions": [*t["matchExpressions"], zone_req]} for t in terms]
                     or [{"matchExpressions": [zone_req]}])
    return terms or None
