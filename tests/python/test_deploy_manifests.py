"""deploy/kubernetes: every manifest validates against the Kubernetes API schemas (bundled by
kubernetes-validate, so no cluster or network is needed), the validator rejects broken ones,
and the Deployment has what the replicas need (probes on /health, resources, scraping)."""
import copy
import json
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

KUBERNETES_VERSION = "1.30.0"  # the oldest release with the preStop sleep action
MANIFESTS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "kubernetes").glob("*.yaml"))


def documents():
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(kind):
    return next(doc for doc in documents() if doc["kind"] == kind)


def validate(doc):
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates(path):
    for doc in yaml.safe_load_all(path.read_text()):
        validate(doc)


def container(deployment):
    return deployment["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("breakage", ["port as text", "misspelled field", "no selector"])
def test_a_broken_manifest_is_rejected(breakage):
    deployment = copy.deepcopy(by_kind("Deployment"))
    if breakage == "port as text":
        container(deployment)["ports"][0]["containerPort"] = "eighty"
    elif breakage == "misspelled field":
        container(deployment)["readinesProbe"] = container(deployment).pop("readinessProbe")
    else:
        del deployment["spec"]["selector"]
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment)


def test_the_deployment_has_probes_resources_and_scraping():
    deployment, service = by_kind("Deployment"), by_kind("Service")
    pod = deployment["spec"]["template"]
    c = container(deployment)
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/health"
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics"
    assert "--metrics-public" in c["args"]  # the scrape carries no API key
    port = next(p["containerPort"] for p in c["ports"] if p["name"] == "http")
    assert annotations["prometheus.io/port"] == str(port) and f"--port={port}" in c["args"]
    # The Service selects these pods, and the pod outlives lumen's drain.
    assert all(pod["metadata"]["labels"].get(k) == v for k, v in service["spec"]["selector"].items())
    grace = float(next(a for a in c["args"] if a.startswith("--shutdown-grace=")).split("=")[1])
    assert pod["spec"]["terminationGracePeriodSeconds"] > grace + c["lifecycle"]["preStop"]["sleep"]["seconds"]


def test_the_deployment_runs_the_container_images_entrypoint():
    """The pod's args follow deploy/container/Dockerfile's ENTRYPOINT (`lumen serve --host=...`):
    they must not name the subcommand again or repeat a flag the entrypoint gives (lumen refuses
    a flag given twice), and the model path must be under the image's /models volume."""
    dockerfile = (MANIFESTS[0].parents[1] / "container" / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M).group(1))
    assert entrypoint[:2] == ["lumen", "serve"] and "VOLUME /models" in dockerfile
    c = container(by_kind("Deployment"))
    assert c["image"] == "lumen:latest"
    assert "serve" not in c["args"]
    given = {a.split("=")[0] for a in entrypoint[2:]}
    assert not given & {a.split("=")[0] for a in c["args"]}, (entrypoint, c["args"])
    model = next(a for a in c["args"] if a.startswith("--model=")).split("=", 1)[1]
    assert model.startswith("/models/") and any(m["mountPath"] == "/models" for m in c["volumeMounts"])
