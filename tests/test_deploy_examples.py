"""The deployment examples under deploy/ stay valid: instance files against Dagster's schema, the rest parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from dagster._core.instance.config import dagster_instance_config

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


@pytest.mark.parametrize(("folder", "launcher"), [("docker", "DockerRunLauncher"), ("kubernetes", "K8sRunLauncher")])
def test_instance_examples_validate(folder: str, launcher: str) -> None:
    config, _ = dagster_instance_config(str(DEPLOY / folder), "dagster.yaml")
    assert "postgres" in config["storage"]
    assert config["run_launcher"]["class"] == launcher
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    # One run per tenant: by the tag every job carries, and by code location for runs of selected assets.
    for key in ("nexus/tenant", "dagster/code_location"):
        assert {"key": key, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
    # dagster-postgres installs psycopg2; SQLAlchemy 2.1 would otherwise look for psycopg 3.
    assert config["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"


def test_other_examples_parse() -> None:
    compose = yaml.safe_load((DEPLOY / "docker" / "compose.yaml").read_text())
    workspace = yaml.safe_load((DEPLOY / "docker" / "workspace.yaml").read_text())
    locations = {
        entry["grpc_server"]["host"]: entry["grpc_server"]["location_name"] for entry in workspace["load_from"]
    }
    assert set(locations) <= set(compose["services"])
    for name, location in locations.items():
        environment = compose["services"][name]["environment"]
        context = json.loads(environment["DAGSTER_CONTAINER_CONTEXT"])
        # The code server and its runs know their tenant, named as the code location is.
        assert environment["NEXUS_TENANT"] == location
        assert {"NEXUS_DATA_DIR=/data/tenant", f"NEXUS_TENANT={location}"} <= set(context["docker"]["env_vars"])
    k8s = json.loads((DEPLOY / "kubernetes" / "tenant-container-context.json").read_text())["k8s"]
    assert {m["name"] for m in k8s["volume_mounts"]} == {v["name"] for v in k8s["volumes"]}
    run_config = yaml.safe_load((DEPLOY / "kubernetes" / "run-config-k8s-executor.yaml").read_text())
    assert run_config["execution"]["config"]["job_namespace"] == "nexus-memory"
