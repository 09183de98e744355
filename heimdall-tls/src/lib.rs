//! The TLS edge that Heimdall's binaries share, so that the API, the Agent
//! and the SDK read certificates and check identities the same way.
//!
//! - [`identity`]: who a certificate names (the URI SANs the installation
//!   CA writes), and the SHA-256 of a certificate and of its public key.
//! - [`verify`]: what clients check of a server: the identity they meant
//!   to reach, not just a host name.
//! - [`server`] (feature `server`): the accept loop with handshake and
//!   header timeouts, a connection cap and graceful shutdown; and
//!   [`logging`], the servers' log format; [`openapi`], the error
//!   responses both servers' OpenAPI documents list.
//! - [`database`]: a database's refusal of a connection (a wrong CA, TLS
//!   required), explained with the setting that fixes it.
#![forbid(unsafe_code)]

pub mod database;
mod error;
pub mod identity;
#[cfg(feature = "server")]
pub mod logging;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod openapi;
#[cfg(feature = "server")]
pub mod server;
pub mod verify;

pub use error::{LogFormatError, TlsSetupError};
