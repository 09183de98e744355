//! `heimdall certificate`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum CertificateCommand {
    /// List issued certificates (owners and admins see all; members their own)
    List,
    /// Revoke one certificate by its SHA-256
    Revoke {
        /// The certificate's SHA-256 (as `certificate list` prints it)
        sha256: String,
    },
}
