//! Values: versions, grants, holders, certificates.

use reqwest::Method;

use crate::wire::{
    AgentLocation, CertificateRequest, CreateVersion, CreatedVersion, DeactivateVersion, IssuedCertificate,
    SecretVersion,
};
#[cfg(doc)]
use crate::AgentClient;
use crate::{Client, Identity, Result};

impl Client {
    /// `POST /v1/secrets/{id-or-name}/versions` (owner, admin; a personal
    /// secret: its owner): numbers the next version in `environment` and
    /// returns one signed write grant per Agent that holds it, issued to
    /// the caller. Send the value with [`AgentClient::put_value`]; it never
    /// goes to the API. `writer` is the client certificate the value will
    /// be sent with: for a personal secret the API checks (or, for one
    /// created before keys were bound, binds) its key.
    pub async fn create_version(
        &self,
        secret: &str,
        environment: &str,
        writer: Option<&Identity>,
    ) -> Result<CreatedVersion> {
        self.create_version_keeping(secret, environment, writer, None).await
    }

    /// [`Client::create_version`], with how long the version it replaces
    /// stays readable (`keep_previous`: `0`, the default, or a period such
    /// as `1h`, at most `30d`); after it every Agent erases that version
    /// and answers `VERSION_SUPERSEDED` for it.
    pub async fn create_version_keeping(
        &self,
        secret: &str,
        environment: &str,
        writer: Option<&Identity>,
        keep_previous: Option<&str>,
    ) -> Result<CreatedVersion> {
        let body = CreateVersion {
            environment: environment.to_owned(),
            certificate_sha256: writer.map(Identity::certificate_sha256).transpose()?,
            keep_previous: keep_previous.map(str::to_owned),
        };
        self.with_body(Method::POST, &["secrets", secret, "versions"], &body).await
    }

    /// `POST /v1/secrets/{id-or-name}/deactivate`: a leaked version. Every
    /// Agent replaces it with a tombstone on its next sync and answers
    /// `VERSION_DEACTIVATED` for it.
    pub async fn deactivate_version(
        &self,
        secret: &str,
        environment: &str,
        version: i64,
    ) -> Result<SecretVersion> {
        let body = DeactivateVersion { environment: environment.to_owned(), version };
        self.with_body(Method::POST, &["secrets", secret, "deactivate"], &body).await
    }

    /// `GET /v1/secrets/{id-or-name}/holders?environment=`: the Agents to
    /// read `secret` from in `environment`, with their local API URLs.
    pub async fn secret_holders(&self, secret: &str, environment: &str) -> Result<Vec<AgentLocation>> {
        // The server's page size: a read's first request stays the one an
        // API from before paged holders answers (it knew no `limit`).
        self.follow_pages(&["secrets", secret, "holders"], &[("environment", Some(environment))], None).await
    }

    /// `POST /v1/me/certificate`: a client certificate for the CSR's public
    /// key (make the key locally; only the CSR is sent).
    pub async fn issue_certificate(&self, csr_pem: &str) -> Result<IssuedCertificate> {
        let body = CertificateRequest { csr: csr_pem.to_owned() };
        self.with_body(Method::POST, &["me", "certificate"], &body).await
    }

    /// `GET /v1/certificates`: the certificates the installation CA issued
    /// (people's, and Agents' local API ones), newest first; a member sees
    /// only her own.
    pub async fn list_certificates(&self) -> Result<Vec<heimdall_core::secrets::IssuedCertificateInfo>> {
        self.get_all_pages(&["certificates"], &[]).await
    }

    /// `DELETE /v1/certificates/{sha256}`: revokes one certificate (owner,
    /// admin; a member, her own). Agents refuse a person's from their next
    /// sync; clients refuse an Agent's local API certificate at once.
    pub async fn revoke_certificate(
        &self,
        sha256: &str,
    ) -> Result<heimdall_core::secrets::IssuedCertificateInfo> {
        self.delete(&["certificates", sha256]).await
    }
}
