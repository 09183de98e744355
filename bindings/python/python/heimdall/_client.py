"""The clients: `Client` and `AsyncClient` for the API, `AgentClient` and
`AsyncAgentClient` for an Agent's local API (where values are read).

Each call goes through heimdall-sdk (Rust). The sync clients block on a
tokio runtime of their own with the GIL released; the async ones return
awaitables (asyncio) running on a shared tokio runtime.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from . import _native
from ._models import (
    AccessLogEntry,
    AgentLocation,
    CatalogEntry,
    CatalogKind,
    Health,
    Job,
    JobLog,
    Resource,
    ResourceDetail,
    ResourceStatus,
    Secret,
    SecretDetail,
    WhoAmI,
)
from ._profile import load_profile

Identity = _native.Identity
SecretValue = _native.SecretValue
PathLike = str | os.PathLike[str]

#: How long ``wait=True`` waits by default, in seconds.
DEFAULT_WAIT = 600.0


def _ca(ca_pem: str | None, ca_file: PathLike | None) -> str | None:
    if ca_pem is not None and ca_file is not None:
        raise TypeError("give ca_pem or ca_file, not both")
    if ca_file is not None:
        with open(ca_file, encoding="utf-8") as f:
            return f.read()
    return ca_pem


def _tags(tags: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if tags is None else dict(tags)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _change(**fields: Any) -> str:
    """A change's JSON: the fields given, none of those left out."""
    return json.dumps({k: v for k, v in fields.items() if v is not None})


def _list(items: Sequence[str] | None) -> list[str] | None:
    if isinstance(items, str):
        raise TypeError("give a list of names, not one string")
    return None if items is None else list(items)


def _value(value: str | SecretValue) -> str:
    return value.reveal() if isinstance(value, SecretValue) else value


class Client:
    """The Heimdall API, as one identity (a token).

    ``Client(url, token)``; with ``ca_pem``/``ca_file`` the API's HTTPS
    certificate must come from that installation CA (``heimdall dev``'s
    does), else the system's roots are trusted. ``Client.from_profile()``
    uses what ``heimdall login`` or ``heimdall dev`` saved.
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        ca_pem: str | None = None,
        ca_file: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> None:
        self._native = _native.api_client(
            url, token, _ca(ca_pem, ca_file), connect_timeout, request_timeout, False
        )

    @classmethod
    def from_profile(
        cls,
        profile: str | None = None,
        *,
        config_dir: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> Client:
        """The CLI's profile ``profile`` (else ``$HEIMDALL_PROFILE``, else the current one)."""
        p = load_profile(profile, config_dir=config_dir)
        return cls(p.api_url, p.token, ca_pem=p.ca_pem, connect_timeout=connect_timeout, request_timeout=request_timeout)

    def __repr__(self) -> str:
        return repr(self._native)

    def health(self) -> Health:
        return Health.from_dict(self._native.health())

    def whoami(self) -> WhoAmI:
        return WhoAmI.from_dict(self._native.whoami())

    # ---- the catalog --------------------------------------------------------

    def create_catalog_entry(
        self, kind: CatalogKind, name: str, *, description: str | None = None, parent: str | None = None
    ) -> CatalogEntry:
        """``parent``: a system's domain or a component's system, by id or name."""
        return CatalogEntry.from_dict(self._native.create_catalog_entry(kind, name, description, parent))

    def create_domain(self, name: str, *, description: str | None = None) -> CatalogEntry:
        return self.create_catalog_entry("domain", name, description=description)

    def create_system(self, name: str, *, domain: str, description: str | None = None) -> CatalogEntry:
        return self.create_catalog_entry("system", name, description=description, parent=domain)

    def create_component(self, name: str, *, system: str, description: str | None = None) -> CatalogEntry:
        return self.create_catalog_entry("component", name, description=description, parent=system)

    def create_environment(self, name: str, *, description: str | None = None) -> CatalogEntry:
        return self.create_catalog_entry("environment", name, description=description)

    def list_catalog(self, kind: CatalogKind, *, parent: str | None = None) -> list[CatalogEntry]:
        return [CatalogEntry.from_dict(e) for e in self._native.list_catalog(kind, parent)]

    def get_catalog_entry(self, kind: CatalogKind, id_or_name: str) -> CatalogEntry:
        return CatalogEntry.from_dict(self._native.get_catalog_entry(kind, id_or_name))

    def rename_catalog_entry(self, kind: CatalogKind, id_or_name: str, new_name: str) -> CatalogEntry:
        return CatalogEntry.from_dict(self._native.rename_catalog_entry(kind, id_or_name, new_name))

    def delete_catalog_entry(self, kind: CatalogKind, id_or_name: str) -> None:
        self._native.delete_catalog_entry(kind, id_or_name)

    # ---- Resources and jobs -------------------------------------------------

    def create_resource(
        self,
        *,
        component: str,
        schema: str,
        environment: str,
        name: str,
        input: Any,
        region: str | None = None,
        wait: bool = False,
        timeout: float = DEFAULT_WAIT,
    ) -> Resource:
        """Requests a Resource. With ``wait=True``, returns once it is no longer
        queued, applying or deleting (``provisioned``, ``failed``,
        ``pending_approval``, ...: check ``.status``), or raises
        ``HeimdallError`` with ``kind == "timeout"`` after ``timeout`` seconds."""
        return Resource.from_dict(
            self._native.create_resource(
                component, schema, environment, name, json.dumps(input), region, timeout if wait else None
            )
        )

    def wait_for_resource(self, id_or_name: str, *, timeout: float = DEFAULT_WAIT) -> Resource:
        return Resource.from_dict(self._native.wait_for_resource(id_or_name, timeout))

    def list_resources(
        self,
        *,
        component: str | None = None,
        environment: str | None = None,
        status: ResourceStatus | None = None,
        schema_type: str | None = None,
        outdated: bool = False,
    ) -> list[Resource]:
        """Resources you may read; ``outdated=True``: only those on an older
        version of their schema type than a new request gets."""
        return [
            Resource.from_dict(r)
            for r in self._native.list_resources(component, environment, status, schema_type, outdated)
        ]

    def get_resource(self, id_or_name: str) -> ResourceDetail:
        return ResourceDetail.from_dict(self._native.get_resource(id_or_name))

    def delete_resource(self, id_or_name: str, *, wait: bool = False, timeout: float = DEFAULT_WAIT) -> Resource:
        return Resource.from_dict(self._native.delete_resource(id_or_name, timeout if wait else None))

    def abandon_resource(self, id_or_name: str) -> Resource:
        """Stops managing a Resource without destroying anything: its state
        stays in the account's bucket and it is listed ``abandoned``; a
        queued apply is cancelled."""
        return Resource.from_dict(self._native.abandon_resource(id_or_name))

    def upgrade_resource(
        self,
        id_or_name: str,
        *,
        schema_version: int,
        input: Any = None,
        allow_downgrade: bool = False,
        wait: bool = False,
        timeout: float = DEFAULT_WAIT,
    ) -> Resource:
        """Moves a Resource to another version of its schema (a new module
        version) with a new revision; without ``input`` the current one is
        kept. An older version needs ``allow_downgrade=True``."""
        return Resource.from_dict(
            self._native.upgrade_resource(
                id_or_name, schema_version, _json_or_none(input), allow_downgrade, timeout if wait else None
            )
        )

    def list_jobs(self, *, resource: str | None = None, component: str | None = None) -> list[Job]:
        return [Job.from_dict(j) for j in self._native.list_jobs(resource, component)]

    def get_job(self, id: str) -> Job:
        return Job.from_dict(self._native.get_job(id))

    def get_job_log(self, id: str) -> JobLog:
        return JobLog.from_dict(self._native.get_job_log(id))

    # ---- secrets: metadata through the API, values through an Agent -----------

    def create_secret(
        self,
        name: str,
        *,
        secret_type: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        components: Sequence[str] | None = None,
    ) -> Secret:
        """A new secret, without a value (values go only to an Agent: ``heimdall secret set``)."""
        return Secret.from_dict(
            self._native.create_secret(name, secret_type, description, _tags(tags), _list(components))
        )

    def list_secrets(self) -> list[Secret]:
        return [Secret.from_dict(s) for s in self._native.list_secrets()]

    def get_secret(self, id_or_name: str) -> SecretDetail:
        return SecretDetail.from_dict(self._native.get_secret(id_or_name))

    def update_secret(
        self,
        id_or_name: str,
        *,
        secret_type: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        components: Sequence[str] | None = None,
    ) -> Secret:
        """Fields left ``None`` stay; ``tags`` and ``components`` replace the whole set."""
        return Secret.from_dict(
            self._native.update_secret(id_or_name, secret_type, description, _tags(tags), _list(components))
        )

    def delete_secret(self, id_or_name: str, *, environment: str | None = None) -> SecretDetail:
        return SecretDetail.from_dict(self._native.delete_secret(id_or_name, environment))

    def access_log(self, id_or_name: str, *, environment: str | None = None) -> list[AccessLogEntry]:
        """The newest reads (the first page, 100 entries): ``access_log_page`` for more."""
        return self.access_log_page(id_or_name, environment=environment)[0]

    def access_log_page(
        self,
        id_or_name: str,
        *,
        environment: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> tuple[list[AccessLogEntry], str | None]:
        """One page, newest first, and the cursor of the next (pass it as ``after``), or ``None``."""
        entries, next_after = self._native.access_log(id_or_name, environment, limit, after)
        return [AccessLogEntry.from_dict(e) for e in entries], next_after

    def secret_holders(self, secret: str, environment: str) -> list[AgentLocation]:
        return [AgentLocation.from_dict(h) for h in self._native.secret_holders(secret, environment)]

    def get_secret_value(
        self,
        secret: str,
        *,
        environment: str,
        identity: Identity,
        version: int | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> SecretValue:
        """``heimdall secret get`` as a person: the API names the Agents holding
        ``environment`` and the first that answers serves the value over mTLS
        with ``identity`` (``heimdall.load_identity()``), recording the read."""
        return self._native.get_secret_value(
            secret, environment, identity, version, connect_timeout, request_timeout
        )

    # ---- the second day: what was registered, changed or retired -------------
    # Each answers the API's JSON (a ``dict``); each change names only the
    # fields it changes, and refuses what the API would refuse.

    def list_schemas(self, type: str | None = None) -> list[dict[str, Any]]:
        return self._native.list_schemas(type)

    def deprecate_schema(self, type: str, *, version: int, deprecated: bool = True) -> dict[str, Any]:
        """No new Resources on this version (upgrades away still work);
        ``deprecated=False`` takes it back."""
        return self._native.deprecate_schema(type, version, deprecated)

    def delete_schema(self, type: str, *, version: int) -> None:
        """Refused ``NOT_EMPTY`` while a Resource uses the version."""
        self._native.delete_schema(type, version)

    def list_cloud_accounts(self) -> list[dict[str, Any]]:
        return self._native.list_cloud_accounts()

    def update_cloud_account(
        self,
        id_or_name: str,
        *,
        region: str | None = None,
        auth: Mapping[str, Any] | None = None,
        state_bucket: str | None = None,
        state_endpoint: str | None = None,
        state_storage_account: str | None = None,
        drift_check_every: str | None = None,
    ) -> dict[str, Any]:
        """A new state location is refused while a Resource keeps state at the old one."""
        change = _change(
            region=region, auth=auth, state_bucket=state_bucket, state_endpoint=state_endpoint,
            state_storage_account=state_storage_account, drift_check_every=drift_check_every,
        )  # fmt: skip
        return self._native.update_cloud_account(id_or_name, change)

    def unlink_cloud_account(
        self, id_or_name: str, *, scope: str, environment: str, scope_id: str | None = None
    ) -> None:
        link = _change(scope=scope, scope_id=scope_id, environment=environment)
        self._native.unlink_cloud_account(id_or_name, link)

    def delete_cloud_account(self, id_or_name: str) -> None:
        """Refused while the account is linked or Resources keep state on it."""
        self._native.delete_cloud_account(id_or_name)

    def list_policies(self) -> list[dict[str, Any]]:
        return self._native.list_policies()

    def update_policy(
        self,
        key: str,
        *,
        text: str | None = None,
        description: str | None = None,
        expected_version: int | None = None,
    ) -> dict[str, Any]:
        """The policy's next version, validated and applied at once (its
        history is kept); ``expected_version`` refuses a concurrent change."""
        change = _change(text=text, description=description, expected_version=expected_version)
        return self._native.update_policy(key, change)

    def list_databases(self) -> list[dict[str, Any]]:
        return self._native.list_databases()

    def update_database(
        self,
        name: str,
        *,
        host: str | None = None,
        port: int | None = None,
        tls: str | None = None,
        ca_pem: str | None = None,
        admin_secret: str | None = None,
    ) -> dict[str, Any]:
        change = _change(host=host, port=port, tls=tls, ca_pem=ca_pem, admin_secret=admin_secret)
        return self._native.update_database(name, change)

    def delete_database(self, name: str) -> None:
        """Refused ``NOT_EMPTY`` while it has service users."""
        self._native.delete_database(name)

    def list_service_users(self, database: str) -> list[dict[str, Any]]:
        return self._native.list_service_users(database)

    def delete_service_user(self, database: str, user: str, *, grace: str | None = None) -> dict[str, Any]:
        """No more rotations; after ``grace`` (e.g. ``"1h"``; the user's own by
        default) an Agent drops both logins, then the user and its secret go."""
        return self._native.delete_service_user(database, user, grace)

    def list_notifications(self) -> list[dict[str, Any]]:
        return self._native.list_notifications()

    def update_notification(
        self, id_or_name: str, *, name: str | None = None, webhook: str | None = None
    ) -> dict[str, Any]:
        """Renamed or pointed at another webhook; its signing secret stays."""
        return self._native.update_notification(id_or_name, _change(name=name, webhook=webhook))


class AsyncClient:
    """`Client` for asyncio: the same methods, each a coroutine."""

    __slots__ = ("_native",)

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        ca_pem: str | None = None,
        ca_file: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> None:
        self._native = _native.api_client(url, token, _ca(ca_pem, ca_file), connect_timeout, request_timeout, True)

    @classmethod
    def from_profile(
        cls,
        profile: str | None = None,
        *,
        config_dir: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> AsyncClient:
        p = load_profile(profile, config_dir=config_dir)
        return cls(p.api_url, p.token, ca_pem=p.ca_pem, connect_timeout=connect_timeout, request_timeout=request_timeout)

    def __repr__(self) -> str:
        return repr(self._native)

    async def health(self) -> Health:
        return Health.from_dict(await self._native.health())

    async def whoami(self) -> WhoAmI:
        return WhoAmI.from_dict(await self._native.whoami())

    async def create_catalog_entry(
        self, kind: CatalogKind, name: str, *, description: str | None = None, parent: str | None = None
    ) -> CatalogEntry:
        return CatalogEntry.from_dict(await self._native.create_catalog_entry(kind, name, description, parent))

    async def create_domain(self, name: str, *, description: str | None = None) -> CatalogEntry:
        return await self.create_catalog_entry("domain", name, description=description)

    async def create_system(self, name: str, *, domain: str, description: str | None = None) -> CatalogEntry:
        return await self.create_catalog_entry("system", name, description=description, parent=domain)

    async def create_component(self, name: str, *, system: str, description: str | None = None) -> CatalogEntry:
        return await self.create_catalog_entry("component", name, description=description, parent=system)

    async def create_environment(self, name: str, *, description: str | None = None) -> CatalogEntry:
        return await self.create_catalog_entry("environment", name, description=description)

    async def list_catalog(self, kind: CatalogKind, *, parent: str | None = None) -> list[CatalogEntry]:
        return [CatalogEntry.from_dict(e) for e in await self._native.list_catalog(kind, parent)]

    async def get_catalog_entry(self, kind: CatalogKind, id_or_name: str) -> CatalogEntry:
        return CatalogEntry.from_dict(await self._native.get_catalog_entry(kind, id_or_name))

    async def rename_catalog_entry(self, kind: CatalogKind, id_or_name: str, new_name: str) -> CatalogEntry:
        return CatalogEntry.from_dict(await self._native.rename_catalog_entry(kind, id_or_name, new_name))

    async def delete_catalog_entry(self, kind: CatalogKind, id_or_name: str) -> None:
        await self._native.delete_catalog_entry(kind, id_or_name)

    async def create_resource(
        self,
        *,
        component: str,
        schema: str,
        environment: str,
        name: str,
        input: Any,
        region: str | None = None,
        wait: bool = False,
        timeout: float = DEFAULT_WAIT,
    ) -> Resource:
        return Resource.from_dict(
            await self._native.create_resource(
                component, schema, environment, name, json.dumps(input), region, timeout if wait else None
            )
        )

    async def wait_for_resource(self, id_or_name: str, *, timeout: float = DEFAULT_WAIT) -> Resource:
        return Resource.from_dict(await self._native.wait_for_resource(id_or_name, timeout))

    async def list_resources(
        self,
        *,
        component: str | None = None,
        environment: str | None = None,
        status: ResourceStatus | None = None,
        schema_type: str | None = None,
        outdated: bool = False,
    ) -> list[Resource]:
        return [
            Resource.from_dict(r)
            for r in await self._native.list_resources(component, environment, status, schema_type, outdated)
        ]

    async def get_resource(self, id_or_name: str) -> ResourceDetail:
        return ResourceDetail.from_dict(await self._native.get_resource(id_or_name))

    async def delete_resource(
        self, id_or_name: str, *, wait: bool = False, timeout: float = DEFAULT_WAIT
    ) -> Resource:
        return Resource.from_dict(await self._native.delete_resource(id_or_name, timeout if wait else None))

    async def abandon_resource(self, id_or_name: str) -> Resource:
        return Resource.from_dict(await self._native.abandon_resource(id_or_name))

    async def upgrade_resource(
        self,
        id_or_name: str,
        *,
        schema_version: int,
        input: Any = None,
        allow_downgrade: bool = False,
        wait: bool = False,
        timeout: float = DEFAULT_WAIT,
    ) -> Resource:
        return Resource.from_dict(
            await self._native.upgrade_resource(
                id_or_name, schema_version, _json_or_none(input), allow_downgrade, timeout if wait else None
            )
        )

    async def list_jobs(self, *, resource: str | None = None, component: str | None = None) -> list[Job]:
        return [Job.from_dict(j) for j in await self._native.list_jobs(resource, component)]

    async def get_job(self, id: str) -> Job:
        return Job.from_dict(await self._native.get_job(id))

    async def get_job_log(self, id: str) -> JobLog:
        return JobLog.from_dict(await self._native.get_job_log(id))

    async def create_secret(
        self,
        name: str,
        *,
        secret_type: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        components: Sequence[str] | None = None,
    ) -> Secret:
        return Secret.from_dict(
            await self._native.create_secret(name, secret_type, description, _tags(tags), _list(components))
        )

    async def list_secrets(self) -> list[Secret]:
        return [Secret.from_dict(s) for s in await self._native.list_secrets()]

    async def get_secret(self, id_or_name: str) -> SecretDetail:
        return SecretDetail.from_dict(await self._native.get_secret(id_or_name))

    async def update_secret(
        self,
        id_or_name: str,
        *,
        secret_type: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        components: Sequence[str] | None = None,
    ) -> Secret:
        return Secret.from_dict(
            await self._native.update_secret(id_or_name, secret_type, description, _tags(tags), _list(components))
        )

    async def delete_secret(self, id_or_name: str, *, environment: str | None = None) -> SecretDetail:
        return SecretDetail.from_dict(await self._native.delete_secret(id_or_name, environment))

    async def access_log(self, id_or_name: str, *, environment: str | None = None) -> list[AccessLogEntry]:
        return (await self.access_log_page(id_or_name, environment=environment))[0]

    async def access_log_page(
        self,
        id_or_name: str,
        *,
        environment: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> tuple[list[AccessLogEntry], str | None]:
        entries, next_after = await self._native.access_log(id_or_name, environment, limit, after)
        return [AccessLogEntry.from_dict(e) for e in entries], next_after

    async def secret_holders(self, secret: str, environment: str) -> list[AgentLocation]:
        return [AgentLocation.from_dict(h) for h in await self._native.secret_holders(secret, environment)]

    async def get_secret_value(
        self,
        secret: str,
        *,
        environment: str,
        identity: Identity,
        version: int | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> SecretValue:
        return await self._native.get_secret_value(
            secret, environment, identity, version, connect_timeout, request_timeout
        )

    # ---- the second day: what was registered, changed or retired -------------
    # Each answers the API's JSON (a ``dict``); each change names only the
    # fields it changes, and refuses what the API would refuse.

    async def list_schemas(self, type: str | None = None) -> list[dict[str, Any]]:
        return await self._native.list_schemas(type)

    async def deprecate_schema(self, type: str, *, version: int, deprecated: bool = True) -> dict[str, Any]:
        """No new Resources on this version (upgrades away still work);
        ``deprecated=False`` takes it back."""
        return await self._native.deprecate_schema(type, version, deprecated)

    async def delete_schema(self, type: str, *, version: int) -> None:
        """Refused ``NOT_EMPTY`` while a Resource uses the version."""
        await self._native.delete_schema(type, version)

    async def list_cloud_accounts(self) -> list[dict[str, Any]]:
        return await self._native.list_cloud_accounts()

    async def update_cloud_account(
        self,
        id_or_name: str,
        *,
        region: str | None = None,
        auth: Mapping[str, Any] | None = None,
        state_bucket: str | None = None,
        state_endpoint: str | None = None,
        state_storage_account: str | None = None,
        drift_check_every: str | None = None,
    ) -> dict[str, Any]:
        """A new state location is refused while a Resource keeps state at the old one."""
        change = _change(
            region=region, auth=auth, state_bucket=state_bucket, state_endpoint=state_endpoint,
            state_storage_account=state_storage_account, drift_check_every=drift_check_every,
        )  # fmt: skip
        return await self._native.update_cloud_account(id_or_name, change)

    async def unlink_cloud_account(
        self, id_or_name: str, *, scope: str, environment: str, scope_id: str | None = None
    ) -> None:
        link = _change(scope=scope, scope_id=scope_id, environment=environment)
        await self._native.unlink_cloud_account(id_or_name, link)

    async def delete_cloud_account(self, id_or_name: str) -> None:
        """Refused while the account is linked or Resources keep state on it."""
        await self._native.delete_cloud_account(id_or_name)

    async def list_policies(self) -> list[dict[str, Any]]:
        return await self._native.list_policies()

    async def update_policy(
        self,
        key: str,
        *,
        text: str | None = None,
        description: str | None = None,
        expected_version: int | None = None,
    ) -> dict[str, Any]:
        """The policy's next version, validated and applied at once (its
        history is kept); ``expected_version`` refuses a concurrent change."""
        change = _change(text=text, description=description, expected_version=expected_version)
        return await self._native.update_policy(key, change)

    async def list_databases(self) -> list[dict[str, Any]]:
        return await self._native.list_databases()

    async def update_database(
        self,
        name: str,
        *,
        host: str | None = None,
        port: int | None = None,
        tls: str | None = None,
        ca_pem: str | None = None,
        admin_secret: str | None = None,
    ) -> dict[str, Any]:
        change = _change(host=host, port=port, tls=tls, ca_pem=ca_pem, admin_secret=admin_secret)
        return await self._native.update_database(name, change)

    async def delete_database(self, name: str) -> None:
        """Refused ``NOT_EMPTY`` while it has service users."""
        await self._native.delete_database(name)

    async def list_service_users(self, database: str) -> list[dict[str, Any]]:
        return await self._native.list_service_users(database)

    async def delete_service_user(self, database: str, user: str, *, grace: str | None = None) -> dict[str, Any]:
        """No more rotations; after ``grace`` (e.g. ``"1h"``; the user's own by
        default) an Agent drops both logins, then the user and its secret go."""
        return await self._native.delete_service_user(database, user, grace)

    async def list_notifications(self) -> list[dict[str, Any]]:
        return await self._native.list_notifications()

    async def update_notification(
        self, id_or_name: str, *, name: str | None = None, webhook: str | None = None
    ) -> dict[str, Any]:
        """Renamed or pointed at another webhook; its signing secret stays."""
        return await self._native.update_notification(id_or_name, _change(name=name, webhook=webhook))


_AGENT_HOW = "use AgentClient.with_program_token(...) or AgentClient.with_certificate(...)"


class AgentClient:
    """An Agent's local API (``https://...``), where values are read: as a
    program (``with_program_token``, a token from ``heimdall-agent token
    create``) or as a person (``with_certificate``). Only the installation
    CA is trusted, and only a certificate naming that Agent."""

    __slots__ = ("_native",)

    def __init__(self) -> None:
        raise TypeError(_AGENT_HOW)

    @classmethod
    def _wrap(cls, native: Any) -> Any:
        self = object.__new__(cls)
        self._native = native
        return self

    @classmethod
    def with_program_token(
        cls,
        url: str,
        token: str,
        *,
        ca_pem: str | None = None,
        ca_file: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> AgentClient:
        """``ca_pem``/``ca_file``: the installation CA (required)."""
        ca = _ca(ca_pem, ca_file)
        if ca is None:
            raise TypeError("give the installation CA: ca_pem or ca_file")
        return cls._wrap(
            _native.agent_with_program_token(url, token, ca, connect_timeout, request_timeout, cls is AsyncAgentClient)
        )

    @classmethod
    def with_certificate(
        cls,
        url: str,
        identity: Identity,
        *,
        agent_id: str,
        pins: Sequence[str] | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> AgentClient:
        """As the person of ``identity``, to the Agent ``agent_id``; ``pins``: the
        SHA-256 of its local API certificates (``Client.secret_holders`` lists both)."""
        return cls._wrap(
            _native.agent_with_certificate(
                url, identity, agent_id, _list(pins), connect_timeout, request_timeout, cls is AsyncAgentClient
            )
        )

    def __repr__(self) -> str:
        return repr(self._native)

    def health(self) -> dict[str, Any]:
        return dict(self._native.health())

    def get_value(self, secret: str, *, environment: str, version: int | None = None) -> SecretValue:
        """The value (the latest version, or ``version``), after the Agent recorded the read."""
        return self._native.get_value(secret, environment, version)

    def get_values(self, secrets: Sequence[str], *, environment: str) -> list[SecretValue]:
        """The latest version of each, in that order, all or none."""
        return list(self._native.get_values(environment, _list(secrets)))

    def write_as_program(self, secret: str, value: str | SecretValue, *, environment: str) -> dict[str, Any]:
        """A new version, with a token that may write (``--verb write``)."""
        return dict(self._native.write_as_program(secret, environment, _value(value)))


class AsyncAgentClient(AgentClient):
    """`AgentClient` for asyncio: the same constructors; each call a coroutine."""

    __slots__ = ()

    @classmethod
    def with_program_token(  # type: ignore[override]
        cls,
        url: str,
        token: str,
        *,
        ca_pem: str | None = None,
        ca_file: PathLike | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> AsyncAgentClient:
        return super().with_program_token(  # type: ignore[return-value]
            url, token, ca_pem=ca_pem, ca_file=ca_file, connect_timeout=connect_timeout, request_timeout=request_timeout
        )

    @classmethod
    def with_certificate(  # type: ignore[override]
        cls,
        url: str,
        identity: Identity,
        *,
        agent_id: str,
        pins: Sequence[str] | None = None,
        connect_timeout: float | None = None,
        request_timeout: float | None = None,
    ) -> AsyncAgentClient:
        return super().with_certificate(  # type: ignore[return-value]
            url, identity, agent_id=agent_id, pins=pins, connect_timeout=connect_timeout, request_timeout=request_timeout
        )

    async def health(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(await self._native.health())

    async def get_value(  # type: ignore[override]
        self, secret: str, *, environment: str, version: int | None = None
    ) -> SecretValue:
        return await self._native.get_value(secret, environment, version)

    async def get_values(self, secrets: Sequence[str], *, environment: str) -> list[SecretValue]:  # type: ignore[override]
        return list(await self._native.get_values(environment, _list(secrets)))

    async def write_as_program(  # type: ignore[override]
        self, secret: str, value: str | SecretValue, *, environment: str
    ) -> dict[str, Any]:
        return dict(await self._native.write_as_program(secret, environment, _value(value)))
