//! Errors become `{"error": {...}}` through the answer both servers use
//! (`heimdall_tls::server::ErrorAnswer`).

pub use heimdall_tls::server::ErrorAnswer;

pub type HttpResult<T> = Result<T, ErrorAnswer>;
