//! Errors become `{"error": {...}}` through the response both servers use
//! (`heimdall_tls::server::error_response`).

use axum::response::{IntoResponse, Response};
use heimdall_core::ports::StoreError;
use heimdall_core::ApiError;

#[derive(Debug)]
pub struct HttpError(pub ApiError);

impl From<ApiError> for HttpError {
    fn from(err: ApiError) -> Self {
        Self(err)
    }
}

impl From<StoreError> for HttpError {
    fn from(err: StoreError) -> Self {
        Self(err.into())
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        heimdall_tls::server::error_response(self.0)
    }
}

pub type HttpResult<T> = Result<T, HttpError>;
