//! The catalog: domains, systems, components, environments.

use reqwest::Method;

use crate::wire::{CatalogEntry, CatalogKind, CreateCatalogEntry, Rename};
use crate::{Client, Result};

impl Client {
    /// `POST /v1/{kind}s`. `entry.parent_id` names the domain of a new
    /// system or the system of a new component.
    pub async fn create_catalog_entry(
        &self,
        kind: CatalogKind,
        entry: &CreateCatalogEntry,
    ) -> Result<CatalogEntry> {
        self.with_body(Method::POST, &[kind.plural()], entry).await
    }

    /// `GET /v1/{kind}s`, for systems optionally `?domain=`, for components
    /// `?system=` (the parent's id or name). `parent` is ignored for domains
    /// and environments, which live directly in the organization.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::CatalogKind;
    /// for system in client.list_catalog(CatalogKind::System, Some("payments")).await? {
    ///     println!("{} {}", system.id, system.name);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_catalog(&self, kind: CatalogKind, parent: Option<&str>) -> Result<Vec<CatalogEntry>> {
        // Systems by domain, components by system.
        let filter: Vec<(&str, Option<&str>)> = kind
            .parent_kind()
            .zip(parent)
            .map(|(parent_kind, parent)| (parent_kind.as_str(), Some(parent)))
            .into_iter()
            .collect();
        self.get_all_pages(&[kind.plural()], &filter).await
    }

    /// `GET /v1/{kind}s/{id-or-name}`.
    pub async fn get_catalog_entry(&self, kind: CatalogKind, id_or_name: &str) -> Result<CatalogEntry> {
        self.get(&[kind.plural(), id_or_name]).await
    }

    /// `PATCH /v1/{kind}s/{id-or-name}`: renames an entry; its id stays.
    pub async fn rename_catalog_entry(
        &self,
        kind: CatalogKind,
        id_or_name: &str,
        new_name: &str,
    ) -> Result<CatalogEntry> {
        let body = Rename { name: new_name.to_owned() };
        self.with_body(Method::PATCH, &[kind.plural(), id_or_name], &body).await
    }

    /// `DELETE /v1/{kind}s/{id-or-name}`: refused with `NOT_EMPTY` while
    /// anything lives in it. The server answers `204 No Content`.
    pub async fn delete_catalog_entry(&self, kind: CatalogKind, id_or_name: &str) -> Result<()> {
        let url = self.url(&[kind.plural(), id_or_name])?;
        self.send_ignoring_body(self.authed(Method::DELETE, url)).await
    }
}
