//! The TLS edge that Heimdall's binaries share, so that the API, the Agent
//! and the SDK read certificates and check identities the same way.
//!
//! - [`identity`]: who a certificate names (the URI SANs the installation
//!   CA writes), and the SHA-256 of a certificate and of its public key.
#![forbid(unsafe_code)]

pub mod identity;
