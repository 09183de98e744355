//! Which cloud account serves a Resource: the System's link for the
//! Resource's environment, else the Domain's, else the organization's.

use crate::ids::{CatalogId, CloudAccountId};
use crate::infra::{AccountLink, LinkScope};

/// Resolves the account for a component in `system` (in `domain`) and
/// `environment`. `None` means `NO_CLOUD_ACCOUNT`.
pub fn resolve_account(
    links: &[AccountLink],
    system: CatalogId,
    domain: CatalogId,
    environment: CatalogId,
) -> Option<CloudAccountId> {
    let find = |scope: LinkScope, id: Option<CatalogId>| {
        links
            .iter()
            .find(|l| l.environment_id == environment && l.scope == scope && l.scope_id == id)
            .map(|l| l.account_id)
    };
    find(LinkScope::System, Some(system))
        .or_else(|| find(LinkScope::Domain, Some(domain)))
        .or_else(|| find(LinkScope::Organization, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;
    use uuid::Uuid;

    fn id(n: u128) -> CatalogId {
        CatalogId::from_uuid(Uuid::from_u128(n))
    }
    fn acct(n: u128) -> CloudAccountId {
        CloudAccountId::from_uuid(Uuid::from_u128(n))
    }
    fn link(account: u128, scope: LinkScope, scope_id: Option<u128>, env: u128) -> AccountLink {
        AccountLink {
            account_id: acct(account),
            scope,
            scope_id: scope_id.map(id),
            environment_id: id(env),
            created_at: OffsetDateTime::UNIX_EPOCH,
            created_by: "o@example.com".into(),
        }
    }

    #[test]
    fn nearest_scope_wins_per_environment() {
        let (system, domain, dev, prod) = (10, 20, 1, 2);
        let links = vec![
            link(100, LinkScope::Organization, None, dev),
            link(101, LinkScope::Organization, None, prod),
            link(200, LinkScope::Domain, Some(domain), prod),
            link(300, LinkScope::System, Some(system), dev),
            link(999, LinkScope::System, Some(11), prod),
        ];
        assert_eq!(resolve_account(&links, id(system), id(domain), id(dev)), Some(acct(300)));
        assert_eq!(resolve_account(&links, id(system), id(domain), id(prod)), Some(acct(200)));
        assert_eq!(resolve_account(&links, id(12), id(21), id(prod)), Some(acct(101)));
        assert_eq!(resolve_account(&links, id(system), id(domain), id(3)), None);
    }
}
