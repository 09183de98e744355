//! People's client certificates, for Agents' local APIs. The key is made
//! on the person's machine; only a CSR comes here, and only its public key
//! is used. The API keeps the certificate's SHA-256, which Agents receive
//! by sync and require: a certificate the API did not record opens nothing.
//!
//! Every certificate the CA issued (people's, and Agents' local API
//! certificates) is listed and revoked one by one here: owners and admins
//! see and revoke all; a member, her own.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use heimdall_core::secrets::{certificates, IssuedCertificateInfo};
use heimdall_core::{ApiError, ErrorCode, Sha256Hex};
use heimdall_wire::{CertificateRequest, IssuedCertificate};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::http::error::HttpResult;
use crate::http::extract::{Caller, JsonBody, QueryParams};
use crate::http::openapi::errors;
use crate::http::AppState;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(issue)).routes(routes!(list)).routes(routes!(revoke))
}

errors!(body IssueErrors: NotFound);
errors!(ListErrors: InvalidInput);
errors!(RevokeErrors: NotFound, InvalidInput);

#[utoipa::path(
    get,
    path = "/v1/certificates",
    tag = "certificates",
    operation_id = "list_certificates",
    summary = "List issued certificates",
    description = "The certificates the installation CA issued, newest first, one page at a time. Owners and \
        admins see every one by default (`certificate.read`); any other member sees only their own.",
    params(crate::http::PageQuery),
    responses((status = 200, description = "A page of the client certificates issued, newest first", body = Vec<heimdall_wire::schemas::IssuedCertificateInfo>, headers(("Heimdall-Next-After" = String, description = "Present when there is more: pass it as `after` for the next page"))), ListErrors),
)]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(page): QueryParams<crate::http::PageQuery>,
) -> HttpResult<(axum::http::HeaderMap, Json<Vec<IssuedCertificateInfo>>)> {
    let certificates = certificates::list(&*state.store, &state.acting(&caller)).await?;
    let (headers, certificates) =
        crate::http::short_page(certificates, page.limit, page.after.as_deref(), |c| {
            vec![crate::http::sort_time_newest_first(c.created_at), c.sha256.to_string()]
        })?;
    Ok((headers, Json(certificates)))
}

/// Revokes one certificate: Agents stop accepting a person's at their next
/// sync; people's clients stop accepting an Agent's local API at once (the
/// holders list no longer carries it), and the Agent gets a new one.
#[utoipa::path(
    delete,
    path = "/v1/certificates/{sha256}",
    tag = "certificates",
    operation_id = "revoke_certificate",
    summary = "Revoke a certificate",
    description = "Revokes one certificate by its SHA-256 fingerprint. Agents stop accepting a person's \
        certificate at their next sync; people's clients stop accepting an Agent's local-API certificate at \
        once, and the Agent gets a new one. Members may revoke their own certificates; any other needs \
        `certificate.revoke` (owners and admins by default).",
    params(("sha256" = String, Path, description = "The certificate's SHA-256 fingerprint: 64 hex digits, either case")),
    responses((status = 200, description = "The certificate, revoked", body = heimdall_wire::schemas::IssuedCertificateInfo), RevokeErrors),
)]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(sha256): Path<String>,
) -> HttpResult<Json<IssuedCertificateInfo>> {
    let sha256 = Sha256Hex::parse_field("the certificate's SHA-256", &sha256)?;
    Ok(Json(certificates::revoke(&*state.store, &state.acting(&caller), &sha256).await?))
}

/// Any member may get a certificate for themselves; what it opens is
/// decided per read by the Agent, with the policies it synced.
#[utoipa::path(
    post,
    path = "/v1/me/certificate",
    tag = "certificates",
    operation_id = "issue_my_certificate",
    summary = "Get a client certificate for yourself",
    description = "Signs the caller's certificate signing request with the installation CA: a client \
        certificate that identifies the caller to Agents' local APIs, where each read is still decided by \
        the policies the Agent synced. Any member may ask; `NOT_FOUND` means this API runs without a CA.",
    request_body = CertificateRequest,
    responses((status = 201, description = "A client certificate for the caller, signed by the installation CA", body = IssuedCertificate), IssueErrors),
)]
async fn issue(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CertificateRequest>,
) -> HttpResult<(StatusCode, Json<IssuedCertificate>)> {
    let Some(ca) = state.ca.clone() else {
        // How this API is run, not an outage (a 503's message is hidden).
        return Err(ApiError::not_found("client certificates (this API runs without --ca-dir)").into());
    };
    let now = state.clock.now();
    let issued = ca
        .issue_member_cert(&body.csr, caller.member.id, &caller.member.email, now)
        .map_err(|e| ApiError::invalid_input(e.to_string()))?;
    let spki_sha256 = heimdall_tls::identity::first_der(&issued.pem)
        .and_then(|der| heimdall_tls::identity::spki_sha256(&der))
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "the issued certificate does not parse"))?;
    let signed =
        certificates::Signed { sha256: issued.sha256.clone(), spki_sha256, not_after: issued.not_after };
    certificates::record_mine(&*state.store, &state.acting(&caller), &signed).await?;
    Ok((
        StatusCode::CREATED,
        Json(IssuedCertificate {
            certificate: issued.pem,
            ca: ca.cert_pem().to_owned(),
            sha256: issued.sha256,
            not_after: issued.not_after,
        }),
    ))
}
