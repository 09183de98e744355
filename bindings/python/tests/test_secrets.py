"""Secrets: metadata and the access log through the API, values through
the dev Agent (as a person with the profile's client certificate, and as
a program with a token the Agent made)."""

from __future__ import annotations

import time
import uuid

import pytest

import heimdall
from conftest import DB_VALUE, World


def wait_for_access(
    client: heimdall.Client, secret: str, accessor_prefix: str, reads: int = 1
) -> list[heimdall.AccessLogEntry]:
    """The Agent reports reads on its next sync (2 s in dev): waits for `reads` of them."""
    deadline = time.monotonic() + 40
    while True:
        entries = client.access_log(secret, environment="dev")
        if sum(e.reads for e in entries if e.accessor.startswith(accessor_prefix)) >= reads:
            return entries
        assert time.monotonic() < deadline, f"no read by {accessor_prefix} in the access log: {entries}"
        time.sleep(0.5)


def test_secret_metadata(world: World) -> None:
    client = world.dev.client()
    detail = client.get_secret("db-password")
    secret = detail.secret
    assert (secret.name, secret.secret_type, secret.tags) == ("db-password", "password", {"team": "payments"})
    api = client.get_catalog_entry("component", "receipts")
    assert secret.components == [api.id]
    assert secret.created_by == "dev@localhost" and secret.status == "active"
    env = client.get_catalog_entry("environment", "dev")
    assert [(v.environment_id, v.version, v.deactivated_at) for v in detail.versions] == [(env.id, 1, None)]
    assert "db-password" in {s.name for s in client.list_secrets()}
    updated = client.update_secret("db-password", description="the orders database")
    assert updated.description == "the orders database" and updated.tags == {"team": "payments"}
    holders = client.secret_holders("db-password", "dev")
    assert [h.agent for h in holders] == ["dev"]
    assert holders[0].url == world.dev.agent_url


def test_secret_get_as_a_person_through_the_agent_and_the_access_log(world: World) -> None:
    client = world.dev.client()
    identity = heimdall.load_identity(config_dir=world.dev.config_dir)
    assert "key=<redacted>" in repr(identity) and "PRIVATE KEY" not in repr(identity)
    value = client.get_secret_value("db-password", environment="dev", identity=identity)
    assert isinstance(value, heimdall.SecretValue)
    assert (value.name, value.environment, value.version) == ("db-password", "dev", 1)
    assert value.reveal() == DB_VALUE, "exactly the bytes written"

    # The same read straight from the Agent, by holder.
    holder = client.secret_holders("db-password", "dev")[0]
    assert holder.url is not None
    agent = heimdall.AgentClient.with_certificate(
        holder.url, identity, agent_id=holder.agent_id, pins=holder.certificates
    )
    assert agent.get_value("db-password", environment="dev", version=1).reveal() == DB_VALUE
    assert agent.health()

    entries = wait_for_access(client, "db-password", "dev@localhost", reads=2)
    mine = [e for e in entries if e.accessor == "dev@localhost"]
    assert mine and all((e.environment, e.version, e.served_by) == ("dev", 1, "dev") for e in mine), entries
    assert sum(e.reads for e in mine) >= 2
    assert mine[0].served_by_id == holder.agent_id
    page, _next = client.access_log_page("db-password", environment="dev", limit=1)
    assert len(page) == 1


def test_secret_get_with_a_program_token(world: World) -> None:
    dev = world.dev
    agent = heimdall.AgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)
    value = agent.get_value("db-password", environment="dev")
    assert value.reveal() == DB_VALUE and value.version == 1
    [again] = agent.get_values(["db-password"], environment="dev")
    assert again.reveal() == DB_VALUE

    # Outside the token's globs: alike 404, the Agent's own error code.
    with pytest.raises(heimdall.HeimdallError) as caught:
        agent.get_value("aws-dev", environment="dev")
    assert caught.value.code == "NOT_FOUND", caught.value
    # Read-only: no writing.
    with pytest.raises(heimdall.HeimdallError) as caught:
        agent.write_as_program("db-password", "new", environment="dev")
    assert caught.value.code == "FORBIDDEN", caught.value

    entries = wait_for_access(dev.client(), "db-password", "program ci-job@")
    assert any(e.accessor.startswith("program ci-job@") and e.version == 1 for e in entries)


def test_a_program_that_may_write_stores_a_version(world: World) -> None:
    dev = world.dev
    name = f"py-{uuid.uuid4().hex[:8]}"
    dev.client().create_secret(name)
    agent = heimdall.AgentClient.with_program_token(dev.agent_url, world.writer_token, ca_pem=dev.ca_file.read_text())
    written = agent.write_as_program(name, "first value", environment="dev")
    assert written["version"] == 1, written
    assert agent.get_value(name, environment="dev").reveal() == "first value"
    versions = dev.client().get_secret(name).versions
    assert [v.version for v in versions] == [1]
    # The CLI reads what the bindings wrote (the dev profile, as a person).
    assert dev.cli("secret", "get", name, "--environment", "dev").stdout == "first value"


def test_a_token_that_is_not_a_program_token_is_refused_without_echo(world: World) -> None:
    with pytest.raises(heimdall.HeimdallError) as caught:
        heimdall.AgentClient.with_program_token(world.dev.agent_url, "hdp_not-a-token", ca_file=world.dev.ca_file)
    err = caught.value
    assert (err.kind, err.code) == ("invalid", None)
    assert "not a program token" in err.message and "hdp_not-a-token" not in str(err) + repr(err)
    with pytest.raises(TypeError):
        heimdall.AgentClient()  # type: ignore[call-arg]
