//! heimdall-wire's integration tests, one binary: the strict body parser
//! and the shape of the error answer.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

#[path = "wire/body.rs"]
mod body;
#[path = "wire/error_body.rs"]
mod error_body;
