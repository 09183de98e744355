"""What the API answers, as frozen dataclasses made from the SDK's wire
types. Each keeps the whole answer in ``raw`` (fields a newer server adds
are there too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping

CatalogKind = Literal["domain", "system", "component", "environment"]
ResourceStatus = Literal[
    "pending_approval", "queued", "applying", "provisioned", "failed", "refused", "deleting", "deleted", "abandoned"
]

Raw = Mapping[str, Any]


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _req_ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


@dataclass(frozen=True, slots=True)
class Health:
    status: str
    version: str
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Health:
        return cls(status=d["status"], version=d["version"], raw=d)


@dataclass(frozen=True, slots=True)
class Member:
    id: str
    email: str
    role: str
    created_at: datetime
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Member:
        return cls(id=d["id"], email=d["email"], role=d["role"], created_at=_req_ts(d["created_at"]), raw=d)


@dataclass(frozen=True, slots=True)
class Organization:
    id: str
    name: str
    created_at: datetime
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Organization:
        return cls(id=d["id"], name=d["name"], created_at=_req_ts(d["created_at"]), raw=d)


@dataclass(frozen=True, slots=True)
class WhoAmI:
    member: Member
    organization: Organization
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> WhoAmI:
        return cls(Member.from_dict(d["member"]), Organization.from_dict(d["organization"]), raw=d)


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    id: str
    kind: CatalogKind
    name: str
    description: str
    parent_id: str | None
    created_at: datetime
    created_by: str
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> CatalogEntry:
        return cls(
            id=d["id"],
            kind=d["kind"],
            name=d["name"],
            description=d.get("description", ""),
            parent_id=d.get("parent_id"),
            created_at=_req_ts(d["created_at"]),
            created_by=d["created_by"],
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class Resource:
    id: str
    name: str
    component_id: str
    environment_id: str
    schema_id: str
    region: str | None
    status: ResourceStatus
    revision: int
    reason: str | None
    outputs: Any
    """Terraform outputs of the last successful apply; sensitive ones are the string ``"<sensitive>"``."""
    drifted_at: datetime | None
    created_at: datetime
    created_by: str
    updated_at: datetime
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Resource:
        return cls(
            id=d["id"],
            name=d["name"],
            component_id=d["component_id"],
            environment_id=d["environment_id"],
            schema_id=d["schema_id"],
            region=d.get("region"),
            status=d["status"],
            revision=d["revision"],
            reason=d.get("reason"),
            outputs=d.get("outputs"),
            drifted_at=_ts(d.get("drifted_at")),
            created_at=_req_ts(d["created_at"]),
            created_by=d["created_by"],
            updated_at=_req_ts(d["updated_at"]),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class ResourceDetail:
    resource: Resource
    revisions: list[dict[str, Any]]
    """Every revision as the API sends it (number, input, state, requested_by, ...)."""
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> ResourceDetail:
        return cls(Resource.from_dict(d["resource"]), list(d.get("revisions", [])), raw=d)


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    resource_id: str
    operation: str
    status: str
    attempts: int
    max_attempts: int
    reason: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    agent: str | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Job:
        return cls(
            id=d["id"],
            resource_id=d["resource_id"],
            operation=d["operation"],
            status=d["status"],
            attempts=d["attempts"],
            max_attempts=d["max_attempts"],
            reason=d.get("reason"),
            queued_at=_req_ts(d["queued_at"]),
            started_at=_ts(d.get("started_at")),
            finished_at=_ts(d.get("finished_at")),
            agent=d.get("agent"),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class JobLog:
    content: str
    truncated: bool
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> JobLog:
        return cls(content=d["content"], truncated=d["truncated"], raw=d)


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret's metadata. The API never holds its value."""

    id: str
    name: str
    secret_type: str
    description: str
    tags: dict[str, str]
    components: list[str]
    personal_owner: str | None
    status: str
    created_at: datetime
    created_by: str
    updated_at: datetime
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> Secret:
        return cls(
            id=d["id"],
            name=d["name"],
            secret_type=d["type"],
            description=d.get("description", ""),
            tags=dict(d.get("tags", {})),
            components=list(d.get("components", [])),
            personal_owner=d.get("personal_owner"),
            status=d.get("status", "active"),
            created_at=_req_ts(d["created_at"]),
            created_by=d["created_by"],
            updated_at=_req_ts(d["updated_at"]),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class SecretVersion:
    environment_id: str
    version: int
    created_at: datetime
    created_by: str
    deactivated_at: datetime | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> SecretVersion:
        return cls(
            environment_id=d["environment_id"],
            version=d["version"],
            created_at=_req_ts(d["created_at"]),
            created_by=d["created_by"],
            deactivated_at=_ts(d.get("deactivated_at")),
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class SecretDetail:
    secret: Secret
    versions: list[SecretVersion]
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> SecretDetail:
        return cls(
            Secret.from_dict(d["secret"]), [SecretVersion.from_dict(v) for v in d.get("versions", [])], raw=d
        )


@dataclass(frozen=True, slots=True)
class AccessLogEntry:
    """The reads of one accessor, of one version, served by one Agent to one address within one second."""

    accessed_at: datetime
    accessor: str
    environment: str
    version: int
    served_by: str
    served_by_id: str
    from_address: str
    reads: int
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> AccessLogEntry:
        return cls(
            accessed_at=_req_ts(d["accessed_at"]),
            accessor=d["accessor"],
            environment=d["environment"],
            version=d["version"],
            served_by=d["served_by"],
            served_by_id=d["served_by_id"],
            from_address=d["from"],
            reads=d["reads"],
            raw=d,
        )


@dataclass(frozen=True, slots=True)
class AgentLocation:
    """An Agent that holds an environment's values, and where its local API is."""

    agent_id: str
    agent: str
    url: str | None
    certificates: list[str] | None
    raw: Raw = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Raw) -> AgentLocation:
        return cls(
            agent_id=d["agent_id"], agent=d["agent"], url=d.get("url"), certificates=d.get("certificates"), raw=d
        )
