"""Heimdall for Python: the API's catalog, Resources, jobs and secrets
metadata, and secret values from an Agent, over the Rust SDK
(heimdall-sdk) through PyO3.

    import heimdall

    client = heimdall.Client.from_profile()          # what `heimdall login` / `heimdall dev` saved
    print(client.whoami().member.email)
    try:
        client.get_catalog_entry("domain", "billing")
    except heimdall.HeimdallError as err:
        assert err.code == "NOT_FOUND"

Every failure is a `HeimdallError` (`.code`, `.kind`, `.message`). Tokens
and values never appear in a `repr()`, a `str()` or an exception; a value
read from an Agent is a `SecretValue` whose text only `.reveal()` gives.
"""

from ._client import AgentClient, AsyncAgentClient, AsyncClient, Client, Identity, SecretValue
from ._errors import ErrorKind, FieldError, HeimdallError
from ._models import (
    AccessLogEntry,
    AgentLocation,
    CatalogEntry,
    CatalogKind,
    Health,
    Job,
    JobLog,
    Member,
    Organization,
    Resource,
    ResourceDetail,
    ResourceStatus,
    Secret,
    SecretDetail,
    SecretVersion,
    WhoAmI,
)
from ._native import __version__
from ._profile import Profile, load_identity, load_profile

__all__ = [
    "AccessLogEntry",
    "AgentClient",
    "AgentLocation",
    "AsyncAgentClient",
    "AsyncClient",
    "CatalogEntry",
    "CatalogKind",
    "Client",
    "ErrorKind",
    "FieldError",
    "HeimdallError",
    "Health",
    "Identity",
    "Job",
    "JobLog",
    "Member",
    "Organization",
    "Profile",
    "Resource",
    "ResourceDetail",
    "ResourceStatus",
    "Secret",
    "SecretDetail",
    "SecretValue",
    "SecretVersion",
    "WhoAmI",
    "__version__",
    "load_identity",
    "load_profile",
]
