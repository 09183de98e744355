//! The caller's own API tokens.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use base64::Engine;
use heimdall_core::domain::TokenInfo;
use heimdall_core::ids::TokenId;
use heimdall_core::ports::NewToken;
use heimdall_core::token::{service, TokenHash, TOKEN_PREFIX};
use heimdall_core::Redacted;
use heimdall_wire::{CreateToken, CreatedToken};
use rand::RngCore;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(revoke))
}

errors!(ListErrors: InvalidInput);
errors!(body CreateErrors);
errors!(RevokeErrors: NotFound);

/// 32 bytes from the OS's CSPRNG, base64url: `hmd_` + 43 characters.
pub(crate) fn generate_token() -> Redacted<String> {
    random_with_prefix(TOKEN_PREFIX)
}

/// `prefix` + 32 bytes from the OS's CSPRNG as 43 characters of base64url.
pub(crate) fn random_with_prefix(prefix: &str) -> Redacted<String> {
    let mut bytes = Redacted::new([0u8; 32]);
    rand::rngs::OsRng.fill_bytes(bytes.expose_mut());
    Redacted::new(format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes.expose())
    ))
}

pub(crate) fn new_token(name: &str) -> (Redacted<String>, NewToken) {
    let token = generate_token();
    let record = NewToken {
        id: TokenId::from_uuid(Uuid::new_v4()),
        name: name.to_owned(),
        hash: TokenHash::of(token.expose()),
        expires_at: None,
    };
    (token, record)
}

#[utoipa::path(
    get,
    path = "/v1/tokens",
    tag = "tokens",
    operation_id = "list_tokens",
    summary = "List your API tokens",
    description = "The caller's own API tokens, oldest first, one page at a time: names, dates and whether \
        each is revoked, never the token itself. Any member may list their own.",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the caller's API tokens, oldest first (never the token itself)", body = Vec<heimdall_wire::schemas::TokenInfo>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<TokenInfo>>)> {
    let tokens = service::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, tokens) = crate::http::short_page(tokens, page.limit, page.after.as_deref(), |t| {
        vec![crate::http::sort_time(t.created_at), t.id.to_string()]
    })?;
    Ok((headers, Json(tokens)))
}

#[utoipa::path(
    post,
    path = "/v1/tokens",
    tag = "tokens",
    operation_id = "create_token",
    summary = "Create an API token",
    description = "Makes a new API token for the caller, under a name, and answers it once: only its hash is \
        kept. Any member may create tokens for themselves.",
    request_body = CreateToken,
    responses((status = 201, description = "The new token, shown once", body = CreatedToken), CreateErrors),
)]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateToken>,
) -> HttpResult<(StatusCode, Json<CreatedToken>)> {
    let (token, record) = new_token(&body.name);
    let info = service::create(&*state.store, &state.acting(&caller), &record).await?;
    Ok((StatusCode::CREATED, Json(CreatedToken { info, token: token.expose().clone() })))
}

#[utoipa::path(
    delete,
    path = "/v1/tokens/{id}",
    tag = "tokens",
    operation_id = "revoke_token",
    summary = "Revoke one of your API tokens",
    description = "Revokes one of the caller's own API tokens, by id: it is refused from the next request. \
        Another member's token, or an unknown id, is `NOT_FOUND`.",
    params(("id" = String, Path, description = "An id")),
    responses((status = 200, description = "The token, revoked", body = heimdall_wire::schemas::TokenInfo), RevokeErrors),
)]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> HttpResult<Json<TokenInfo>> {
    Ok(Json(service::revoke(&*state.store, &state.acting(&caller), &id).await?))
}
