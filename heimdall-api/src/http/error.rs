//! Errors become `{"error": {...}}` with the status from core's one table.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use heimdall_core::ports::StoreError;
use heimdall_core::wire::ErrorBody;
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
        let status = StatusCode::from_u16(self.0.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::error!(code = %self.0.code, message = %self.0.message, "request failed");
        }
        (status, Json(ErrorBody { error: self.0 })).into_response()
    }
}

pub type HttpResult<T> = Result<T, HttpError>;
