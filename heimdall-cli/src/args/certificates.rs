//! `heimdall certificate`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum CertificateCommand {
    /// List issued certificates (owners and admins see all; members their own)
    List,
    /// Revoke one certificate by its SHA-256
    Revoke { sha256: String },
}
