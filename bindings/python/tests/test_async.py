"""`heimdall.AsyncClient` and `AsyncAgentClient`: the same calls as
coroutines, run with asyncio.run (no plugin needed)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

import heimdall
from conftest import DB_VALUE, World


def test_the_async_client_does_what_the_sync_one_does(world: World) -> None:
    dev = world.dev

    async def main() -> None:
        client = heimdall.AsyncClient.from_profile(config_dir=dev.config_dir)
        assert repr(client).startswith("AsyncClient(")
        me, domains, secret = await asyncio.gather(
            client.whoami(), client.list_catalog("domain"), client.get_secret("db-password")
        )
        assert me.member.email == "dev@localhost"
        assert "payments" in {d.name for d in domains}
        assert secret.secret.name == "db-password"

        name = f"async-{uuid.uuid4().hex[:8]}"
        domain = await client.create_domain(name)
        system = await client.create_system(name + "-sys", domain=name)
        assert system.parent_id == domain.id
        assert (await client.get_catalog_entry("domain", name)).id == domain.id

        with pytest.raises(heimdall.HeimdallError) as caught:
            await client.get_catalog_entry("domain", "billing")
        assert caught.value.code == "NOT_FOUND"

        # Many calls at once on one client.
        found = await asyncio.gather(*(client.get_catalog_entry("system", system.id) for _ in range(10)))
        assert {e.id for e in found} == {system.id}

        identity = heimdall.load_identity(config_dir=dev.config_dir)
        value = await client.get_secret_value("db-password", environment="dev", identity=identity)
        assert value.reveal() == DB_VALUE

        agent = heimdall.AsyncAgentClient.with_program_token(dev.agent_url, world.reader_token, ca_file=dev.ca_file)
        assert isinstance(agent, heimdall.AsyncAgentClient)
        assert (await agent.get_value("db-password", environment="dev")).reveal() == DB_VALUE
        values = await agent.get_values(["db-password"], environment="dev")
        assert [v.reveal() for v in values] == [DB_VALUE]

    asyncio.run(main())


def test_an_async_resource_created_with_wait_is_provisioned(world: World) -> None:
    dev = world.dev
    name = f"async-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        client = heimdall.AsyncClient.from_profile(config_dir=dev.config_dir)
        # The event loop stays free while the wait runs in Rust.
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        resource = await client.create_resource(
            component="receipts", schema="bucket", environment="dev", name=name, input={"bucket": name},
            wait=True, timeout=120,
        )  # fmt: skip
        ticker.cancel()
        assert resource.status == "provisioned", dev.logs()
        assert ticks > 10, ticks
        assert [j.status for j in await client.list_jobs(resource=resource.id)] == ["completed"]
        deleted = await client.delete_resource(resource.id, wait=True, timeout=120)
        assert deleted.status == "deleted"

    asyncio.run(main())
