//! Signing in to the Console without a token in a URL
//! (`heimdall_core::console`): the CLI asks for a one-time link as the
//! member it is signed in as; the Console trades the link's code for a
//! session token that ends by itself.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::console::{self, service};
use heimdall_core::ids::TokenId;
use heimdall_core::token::TokenHash;
use heimdall_wire::{ConsoleSession, ConsoleSignInLink, RedeemSignIn};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, NoBody};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_link)).routes(routes!(redeem))
}

errors!(LinkErrors);
errors!(public body RedeemErrors: Unauthenticated);

#[utoipa::path(
    post,
    path = "/v1/console/sign-in-links",
    tag = "console",
    operation_id = "create_console_sign_in_link",
    summary = "Make a one-time link that signs the caller in to the Console",
    description = "A link under the API's URL that signs the Console in as the caller: usable once, within a minute. \
        The code travels in the URL's fragment, which browsers never send to a server; the Console trades it for a \
        session token that ends after 12 hours. `heimdall console` opens one.",
    responses((status = 201, description = "The link's path and when it stops working", body = ConsoleSignInLink), LinkErrors),
)]
async fn create_link(
    State(state): State<AppState>,
    caller: Caller,
    _: NoBody,
) -> HttpResult<(StatusCode, Json<ConsoleSignInLink>)> {
    let code = super::tokens::random_with_prefix(console::CODE_PREFIX);
    let expires_at = service::create_link(&*state.store, &state.acting(&caller), code.expose()).await?;
    Ok((StatusCode::CREATED, Json(ConsoleSignInLink { path: console::link_path(code.expose()), expires_at })))
}

#[utoipa::path(
    post,
    path = "/v1/console/sessions",
    tag = "console",
    operation_id = "redeem_console_sign_in",
    summary = "Trade a sign-in link's code for a Console session",
    description = "Takes the code of a link from `create_console_sign_in_link`, once and before it expires, and \
        answers a token for the link's member that ends after 12 hours (listed as `console session` in their \
        tokens, revocable like any). A code that is unknown, used, expired or whose member was removed is refused \
        `UNAUTHENTICATED`, and nothing is made.",
    request_body = RedeemSignIn,
    security(()),
    responses((status = 201, description = "The session's token, shown once", body = ConsoleSession), RedeemErrors),
)]
async fn redeem(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<RedeemSignIn>,
) -> HttpResult<(StatusCode, Json<ConsoleSession>)> {
    let token = super::tokens::generate_token();
    let made = (TokenId::from_uuid(Uuid::new_v4()), TokenHash::of(token.expose()));
    let session = service::redeem(&*state.store, &body.code, made, state.clock.now()).await?;
    let service::Session { email, expires_at } = session;
    Ok((StatusCode::CREATED, Json(ConsoleSession { token: token.expose().clone(), expires_at, email })))
}
