//! Making an Agent ready: `enroll` with a one-time token ([`enroll`]),
//! `configure` ([`configure`]), `heimdall dev`'s Agent ([`dev`]), program
//! tokens made on this machine ([`token_command`]) and `rekey` ([`rekey`]).

pub mod configure;
pub mod dev;
pub mod enroll;
mod error;
pub mod rekey;
pub mod token_command;

pub use error::SetupError;
