"""compose/external-stores.yaml over compose.yaml: the gateway against a managed PostgreSQL,
a Kafka cluster and an S3 service. No bundled store starts, every Tuneplane service is
pointed at the external ones (by compose's own names, so a shell's settings never leak in),
`init` waits on none of the bundled ones and makes topics of replication 3; a missing
address is refused by name."""

from __future__ import annotations

import json

import pytest

from tests.compose.test_compose import REQUIRED_ENV, STORES, built
from tests.support.compose import COMPOSE, docker_compose

EXTERNAL = COMPOSE.parent / "external-stores.yaml"
ADDRESSES = {"TUNEPLANE_COMPOSE_DATABASE_URL": "postgresql://u:p@db.example:5432/tuneplane",
             "TUNEPLANE_COMPOSE_KAFKA_BOOTSTRAP": "k1.example:9092,k2.example:9092",
             "TUNEPLANE_COMPOSE_S3_ENDPOINT": "https://s3.example"}


def test_every_service_is_pointed_at_the_external_stores_and_none_is_started() -> None:
    env = {**REQUIRED_ENV, **ADDRESSES,
           # the shell's own settings (scripts/services, say) are not compose's
           "TUNEPLANE_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/local",
           "TUNEPLANE_KAFKA_BOOTSTRAP": "127.0.0.1:9092"}
    done = docker_compose("-f", str(EXTERNAL), "--profile", "gateway", "config", "--format",
                          "json", env=env)
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert set(services) == set(built())
    assert not set(STORES) & set(services)
    for name, service in services.items():
        found = service["environment"]
        assert found["TUNEPLANE_DATABASE_URL"] == ADDRESSES["TUNEPLANE_COMPOSE_DATABASE_URL"]
        assert found["TUNEPLANE_KAFKA_BOOTSTRAP"] == ADDRESSES["TUNEPLANE_COMPOSE_KAFKA_BOOTSTRAP"]
        assert found["TUNEPLANE_S3_ENDPOINT"] == "https://s3.example", name
        assert not set(STORES) & set(service.get("depends_on", {})), name
    assert services["init"]["environment"]["TUNEPLANE_TOPIC_REPLICATION"] == "3"


@pytest.mark.parametrize("missing", sorted(ADDRESSES))
def test_a_missing_address_of_an_external_store_is_refused_by_name(missing: str) -> None:
    env = {**REQUIRED_ENV, **{k: v for k, v in ADDRESSES.items() if k != missing}}
    done = docker_compose("-f", str(EXTERNAL), "--profile", "gateway", "config", env=env)
    assert done.returncode != 0
    assert missing in done.stderr, done.stderr
