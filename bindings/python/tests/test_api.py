"""The API through `heimdall.Client`: who am I, the catalog, Resources
applied by the dev Agent's real Terraform, jobs, and typed errors."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid

import pytest

import heimdall
from conftest import REPO, Dev, World


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_health_and_whoami(dev: Dev) -> None:
    client = dev.client()
    health = client.health()
    assert health.status == "ok"
    assert health.version
    me = client.whoami()
    assert me.member.email == "dev@localhost"
    assert me.member.role == "owner"
    assert me.organization.name == "dev"
    assert me.member.created_at.tzinfo is not None
    # The explicit constructor reaches the same identity as the profile.
    explicit = heimdall.Client(dev.url, dev.owner_token, ca_file=dev.ca_file)
    assert explicit.whoami().member.id == me.member.id


def test_catalog_entries_are_created_listed_renamed_and_deleted(world: World) -> None:
    client = world.dev.client()
    domain = client.create_domain(unique("ledger"), description="books")
    assert (domain.kind, domain.description, domain.parent_id) == ("domain", "books", None)
    assert domain.created_by == "dev@localhost"
    system = client.create_system(unique("core"), domain=domain.name)
    assert system.parent_id == domain.id
    component = client.create_component(unique("worker"), system=system.name)
    assert component.kind == "component" and component.parent_id == system.id

    assert client.get_catalog_entry("system", system.name) == system
    assert client.get_catalog_entry("component", component.id) == component
    assert [s.name for s in client.list_catalog("system", parent=domain.name)] == [system.name]
    names = {d.name for d in client.list_catalog("domain")}
    assert {"payments", domain.name} <= names
    assert {"receipts"} <= {c.name for c in client.list_catalog("component", parent="checkout")}

    renamed = client.rename_catalog_entry("component", component.id, component.name + "-2")
    assert (renamed.id, renamed.name) == (component.id, component.name + "-2")

    # Not empty: the API's stable code, as `.code`.
    with pytest.raises(heimdall.HeimdallError) as refused:
        client.delete_catalog_entry("domain", domain.name)
    assert refused.value.code == "NOT_EMPTY", refused.value
    client.delete_catalog_entry("component", renamed.id)
    client.delete_catalog_entry("system", system.id)
    client.delete_catalog_entry("domain", domain.id)
    with pytest.raises(heimdall.HeimdallError) as gone:
        client.get_catalog_entry("domain", domain.id)
    assert gone.value.code == "NOT_FOUND"


def test_not_found_is_a_heimdall_error_with_its_code(dev: Dev) -> None:
    client = dev.client()
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.get_catalog_entry("domain", "billing")
    err = caught.value
    assert err.code == "NOT_FOUND"
    assert err.kind == "api"
    assert err.message == "domain not found"
    assert str(err) == f"NOT_FOUND: {err.message}"
    assert isinstance(err, Exception)
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.get_secret("never-created")
    assert caught.value.code == "NOT_FOUND"
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.get_job(str(uuid.uuid4()))
    assert caught.value.code == "NOT_FOUND"


def test_a_value_in_metadata_is_refused_value_not_accepted(dev: Dev) -> None:
    client = dev.client()
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.create_secret(unique("api-key"), tags={"secret_value": "hunter2-not-for-the-api"})
    err = caught.value
    assert err.code == "VALUE_NOT_ACCEPTED", err
    # The refusal names the key, never what was under it.
    assert "hunter2" not in str(err) and "hunter2" not in repr(err) and "hunter2" not in err.message
    assert "/tags/secret_value" in err.message, err.message


def test_invalid_input_is_a_schema_violation_naming_the_field(world: World) -> None:
    client = world.dev.client()
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.create_resource(
            component="receipts", schema="bucket", environment="dev", name=unique("bad"), input={"bucket": "NO SPACES"}
        )
    err = caught.value
    assert err.code == "SCHEMA_VIOLATION", err
    assert [f.path for f in err.fields] == ["/bucket"], err.fields
    assert "NO SPACES" not in str(err)


def test_a_resource_created_with_wait_is_provisioned_by_the_agent(world: World) -> None:
    client = world.dev.client()
    began = time.monotonic()
    resource = client.create_resource(
        component="receipts",
        schema="bucket",
        environment="dev",
        name="receipts",
        input={"bucket": "acme-receipts", "tags": {"team": "payments"}},
        wait=True,
        timeout=120,
    )
    assert resource.status == "provisioned", f"{resource}\n{world.dev.logs()}"
    assert resource.revision == 1
    assert resource.outputs["bucket"] == "acme-receipts"
    assert resource.outputs["arn"] == "arn:aws:s3:::acme-receipts"
    assert resource.outputs["tags"] == {"team": "payments"}
    assert resource.outputs["secret"] == "<sensitive>"
    assert time.monotonic() - began < 120
    # Terraform's state is on the dev Agent's disk.
    assert (world.dev.data / "state" / f"{resource.id}.tfstate").exists()

    detail = client.get_resource("receipts")
    assert detail.resource.id == resource.id and detail.resource.status == "provisioned"
    assert [r["number"] for r in detail.revisions] == [1]
    assert resource.id in {r.id for r in client.list_resources(environment="dev", status="provisioned")}

    jobs = client.list_jobs(resource=resource.id)
    assert [(j.operation, j.status) for j in jobs] == [("apply", "completed")], jobs
    job = client.get_job(jobs[0].id)
    assert job.agent == "dev" and job.finished_at is not None and job.attempts == 1
    log = client.get_job_log(job.id)
    assert "Apply complete" in log.content, log.content[-2000:]

    deleted = client.delete_resource("receipts", wait=True, timeout=120)
    assert deleted.status == "deleted", f"{deleted}\n{world.dev.logs()}"
    assert [j.operation for j in client.list_jobs(resource=resource.id)] == ["apply", "destroy"]


def test_a_resource_moves_to_another_schema_version_in_place(world: World) -> None:
    client = world.dev.client()
    kind, name = unique("store"), unique("moved")

    def register() -> None:
        world.dev.cli(
            "schema", "create", "--type", kind,
            "--input-schema", str(REPO / "examples/schemas/bucket.json"),
            "--module-source", str(REPO / "tests/fixtures/modules/bucket"), "--module-version", "1.0.0",
        )  # fmt: skip

    register()
    created = client.create_resource(
        component="receipts", schema=kind, environment="dev", name=name, input={"bucket": name}, wait=True, timeout=120
    )
    assert created.status == "provisioned", f"{created}\n{world.dev.logs()}"
    register()
    assert name in {r.name for r in client.list_resources(schema_type=kind, outdated=True)}, "on version 1 of 2"
    upgraded = client.upgrade_resource(name, schema_version=2, wait=True, timeout=120)
    assert name not in {r.name for r in client.list_resources(schema_type=kind, outdated=True)}
    assert (upgraded.status, upgraded.revision) == ("provisioned", 2), f"{upgraded}\n{world.dev.logs()}"
    assert upgraded.outputs["bucket"] == name, "the input was kept"
    assert [r["schema_version"] for r in client.get_resource(name).revisions] == [1, 2]
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.upgrade_resource(name, schema_version=1)
    assert caught.value.code == "CONFLICT" and "--allow-downgrade" in caught.value.message, caught.value
    back = client.upgrade_resource(name, schema_version=1, allow_downgrade=True, input={"bucket": name, "tags": {"v": "1"}})
    assert back.revision == 3
    assert client.wait_for_resource(name, timeout=120).status == "provisioned", world.dev.logs()
    # Let go without a destroy: listed abandoned, with its history.
    abandoned = client.abandon_resource(name)
    assert abandoned.status == "abandoned", abandoned
    assert [r["number"] for r in client.get_resource(name).revisions] == [1, 2, 3]


def test_a_wait_that_outlasts_its_timeout_says_so_and_the_job_goes_on(world: World) -> None:
    client = world.dev.client()
    name = unique("slow")
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.create_resource(
            component="receipts", schema="bucket", environment="dev", name=name, input={"bucket": name}, wait=True, timeout=0.05
        )
    assert caught.value.kind == "timeout" and caught.value.code is None, caught.value
    assert name in caught.value.message
    settled = client.wait_for_resource(name, timeout=120)
    assert settled.status == "provisioned", world.dev.logs()
    assert client.delete_resource(name, wait=True, timeout=120).status == "deleted"


def test_ctrl_c_ends_a_sync_wait(world: World) -> None:
    client = world.dev.client()
    name = unique("interrupted")
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    began = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        client.create_resource(
            component="receipts", schema="bucket", environment="dev", name=name, input={"bucket": name}, wait=True, timeout=60
        )
    timer.join()
    assert time.monotonic() - began < 5
    # Only the wait ended: the Resource was requested and gets applied.
    assert client.wait_for_resource(name, timeout=120).status == "provisioned", world.dev.logs()
    assert client.delete_resource(name, wait=True, timeout=120).status == "deleted"


def test_no_answer_is_a_transport_error_without_a_code(dev: Dev) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = heimdall.Client(f"https://127.0.0.1:{port}", "hmd_nothing-listens", connect_timeout=2)
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.whoami()
    assert (caught.value.kind, caught.value.code) == ("transport", None)
    assert "connect" in caught.value.message
    with pytest.raises(heimdall.HeimdallError) as caught:
        heimdall.Client("not a url", "hmd_x")
    assert (caught.value.kind, caught.value.code) == ("invalid", None)


def test_the_sync_client_releases_the_gil_while_it_waits(dev: Dev) -> None:
    # A server that accepts connections and never says a word: the call
    # waits out its connect timeout (the TLS handshake) in Rust.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    url = f"https://127.0.0.1:{silent.getsockname()[1]}"
    client = heimdall.Client(url, "hmd_x", connect_timeout=1.5, request_timeout=3)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.whoami()
        except heimdall.HeimdallError as err:
            outcome.append(err)

    thread = threading.Thread(target=call)
    began = time.monotonic()
    thread.start()
    spins = 0
    while thread.is_alive() and time.monotonic() - began < 10:
        spins += 1  # pure Python: runs only while the other thread lets go of the GIL
    thread.join()
    silent.close()
    took = time.monotonic() - began
    assert 1.0 < took < 10, took
    assert spins > 100_000, f"the main thread got only {spins} iterations in {took:.1f}s"
    assert len(outcome) == 1 and isinstance(outcome[0], heimdall.HeimdallError)
    assert outcome[0].kind == "transport"


def test_what_was_registered_is_changed_and_retired_on_the_second_day(world: World) -> None:
    client = world.dev.client()

    # A schema version retired in two steps: deprecated, then deleted once unused.
    kind = unique("retired")
    for version in ("1.0.0", "1.1.0"):
        world.dev.cli(
            "schema", "create", "--type", kind,
            "--input-schema", str(REPO / "examples/schemas/bucket.json"),
            "--module-source", str(REPO / "tests/fixtures/modules/bucket"), "--module-version", version,
        )  # fmt: skip
    assert client.deprecate_schema(kind, version=1)["deprecated_at"], "deprecated"
    client.delete_schema(kind, version=1)
    assert [s["version"] for s in client.list_schemas(kind)] == [2]
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.delete_schema(kind, version=1)
    assert caught.value.code == "NOT_FOUND", caught.value

    # A cloud account changed, unlinked and deleted.
    account, env = unique("spare"), unique("stage")
    client.create_environment(env)
    world.dev.cli(
        "cloud-account", "create", account, "--provider", "aws", "--region", "us-east-1",
        "--state-bucket", "spare-state", "--auth", "static", "--secret", "aws-dev",
    )  # fmt: skip
    world.dev.cli("cloud-account", "link", account, "--scope", "organization", "--environment", env)
    assert client.update_cloud_account(account, region="eu-west-1")["region"] == "eu-west-1"
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.delete_cloud_account(account)
    assert caught.value.code == "NOT_EMPTY", f"refused while linked: {caught.value}"
    client.unlink_cloud_account(account, scope="organization", environment=env)
    client.delete_cloud_account(account)
    assert account not in {a["name"] for a in client.list_cloud_accounts()}

    # A policy's next version, in place.
    policy = unique("no-prod-deletes")
    world.dev.cli("policy", "create", "--name", policy, "--file", str(REPO / "examples/policies/no-prod-deletes.cedar"))
    updated = client.update_policy(policy, description="reviewed", expected_version=1)
    assert (updated["version"], updated["description"]) == (2, "reviewed"), updated
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.update_policy(policy, description="stale", expected_version=1)
    assert caught.value.code == "STALE_REVISION", caught.value

    # A database moved, then deleted; a service user that is not there is refused.
    database = unique("orders")
    world.dev.cli(
        "database", "create", database, "--engine", "postgres", "--host", "127.0.0.1", "--database", "orders",
        "--environment", "dev", "--admin-secret", "db-password", "--tls", "disable",
    )  # fmt: skip
    assert client.update_database(database, port=6432)["port"] == 6432
    assert client.list_service_users(database) == []
    with pytest.raises(heimdall.HeimdallError) as caught:
        client.delete_service_user(database, "app", grace="1h")
    assert caught.value.code == "NOT_FOUND", caught.value
    client.delete_database(database)
    assert database not in {d["name"] for d in client.list_databases()}

    # A notification channel renamed, its webhook kept.
    channel = unique("ops")
    world.dev.cli("notification", "create", "--name", channel, "--webhook", "https://hooks.example.com/heimdall")
    renamed = client.update_notification(channel, name=channel + "-2")
    assert renamed["name"] == channel + "-2" and renamed["url"].startswith("https://hooks.example.com"), renamed
    assert channel + "-2" in {c["name"] for c in client.list_notifications()}
