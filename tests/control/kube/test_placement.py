"""The operator's placement of Kubernetes launches: namespaces by project, the spool grant."""

from __future__ import annotations

import pytest

from tuneplane.control.kube.placement import (
    SPOOL_MOUNT,
    Namespaces,
    PlacementError,
    SpoolGrant,
    Spools,
    workdir_limit,
)


def test_a_project_runs_in_its_namespace_and_every_other_in_the_bare_one() -> None:
    namespaces = Namespaces(["vision=team-vision", "training"])
    assert namespaces.of("vision") == "team-vision"
    assert namespaces.of("nlp") == "training"
    assert namespaces.all() == ["team-vision", "training"]
    assert namespaces.shared() == []
    assert Namespaces(["a=ns", "b=ns", "other"]).shared() == ["ns"]


def test_a_project_without_a_namespace_cannot_launch_and_the_error_says_the_fix() -> None:
    with pytest.raises(PlacementError, match="--kubernetes-namespace nlp=NAMESPACE"):
        Namespaces(["vision=team-vision"]).of("nlp")


@pytest.mark.parametrize("setting", ["vision=Team_Vision", "x=" + "a" * 64, "vision=-a"])
def test_a_namespace_that_is_no_dns_label_is_refused(setting: str) -> None:
    with pytest.raises(PlacementError, match="not a namespace name"):
        Namespaces([setting])


def test_a_project_named_twice_is_refused() -> None:
    with pytest.raises(PlacementError, match="twice"):
        Namespaces(["a=x", "a=y"])


def test_each_grant_gives_its_volume_and_the_sidecars_spool_root() -> None:
    empty = SpoolGrant.parse("emptyDir")
    assert empty.volume() == {"name": "spool", "emptyDir": {}}
    assert empty.root == f"{SPOOL_MOUNT}/spools"  # made private inside the volume
    host = SpoolGrant.parse("hostPath:/local/scratch/tuneplane/")
    assert host.volume()["hostPath"] == {"path": "/local/scratch/tuneplane", "type": "Directory"}
    assert host.root == SPOOL_MOUNT  # shared as /tmp is: each uid below it
    local = SpoolGrant.parse("storageClass:local-nvme:20Gi")
    claim = local.volume()["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "local-nvme"
    assert claim["resources"]["requests"]["storage"] == "20Gi"
    assert str(SpoolGrant.parse("storageClass:local")) == "storageClass:local:1Gi"


@pytest.mark.parametrize("text", ["", "nfs", "hostPath:relative", "hostPath:/a/../etc",
                                  "hostPath:/", "hostPath://",
                                  "storageClass:", "storageClass:Local", "storageClass:x:lots",
                                  "emptyDir:/x"])
def test_a_grant_not_understood_is_refused_saying_the_forms(text: str) -> None:
    with pytest.raises(PlacementError, match="emptyDir, hostPath:/DIR or storageClass"):
        SpoolGrant.parse(text)


def test_a_spool_grant_per_project_and_empty_dir_for_the_others_unless_one_is_bare() -> None:
    spools = Spools(["nlp=hostPath:/scratch", "vision=storageClass:local-nvme"])
    assert str(spools.of("nlp")) == "hostPath:/scratch"
    assert str(spools.of("vision")) == "storageClass:local-nvme:1Gi"
    assert str(spools.of("anyone")) == "emptyDir"
    assert str(Spools(["nlp=emptyDir", "hostPath:/x"]).of("anyone")) == "hostPath:/x"
    assert str(Spools([]).of("anyone")) == "emptyDir"
    with pytest.raises(PlacementError, match="--kubernetes-spool names project 'a' twice"):
        Spools(["a=emptyDir", "a=hostPath:/x"])
    with pytest.raises(PlacementError, match="emptyDir, hostPath:/DIR or storageClass"):
        Spools(["a=nfs:/x"])
    # The project is before the first "=" and a project's name; a grant may hold "=".
    assert str(Spools(["p=hostPath:/x=y"]).of("p")) == "hostPath:/x=y"
    assert str(Spools(["hostPath:/mnt/a=b"]).of("anyone")) == "hostPath:/mnt/a=b"
    with pytest.raises(PlacementError, match="two values for every project not named"):
        Spools(["emptyDir", "hostPath:/x"])
    with pytest.raises(PlacementError, match="emptyDir, hostPath:/DIR or storageClass"):
        Spools(["=emptyDir"])


def test_a_working_directory_limit_is_a_size_or_none() -> None:
    assert (workdir_limit(""), workdir_limit("20Gi")) == ("", "20Gi")
    with pytest.raises(PlacementError, match="--kubernetes-workdir-limit 'lots'"):
        workdir_limit("lots")
