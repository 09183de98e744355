//! The certificates the CA issued, as use cases run once for every
//! adapter: who sees which, who may revoke one, and what issuing one to
//! the caller stores. The adapter signs (the CA's key is its own) and
//! hands core what it signed.

use time::OffsetDateTime;

use super::MemberCertificate;
use super::{certificate_revoked, member_certificate_issued, CertificateKind, IssuedCertificateInfo};
use crate::authz::{Action, Target};
use crate::error::{ApiError, ErrorCode};
use crate::ports::{Actor, CertificateStore};
use crate::Sha256Hex;

/// What the CA signed for the caller: its digest, its key's digest and
/// when it ends.
#[derive(Debug, Clone)]
pub struct Signed {
    pub sha256: Sha256Hex,
    pub spki_sha256: Sha256Hex,
    pub not_after: OffsetDateTime,
}

/// Every certificate when the policies let the caller read them
/// (`certificate.read`), else only her own; newest first as stored.
pub async fn list<S: CertificateStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
) -> Result<Vec<IssuedCertificateInfo>, ApiError> {
    let only = match actor.authorize(Action::CertificateRead, &Target::organization(actor.org())).await {
        Ok(()) => None,
        Err(e) if e.code == ErrorCode::Forbidden => Some(actor.member()),
        Err(e) => return Err(e),
    };
    Ok(store.list_certificates(actor.org(), only).await?)
}

/// Revokes the certificate `sha256`: her own without asking, any other
/// with `certificate.revoke`. One the organization has not issued is not
/// found.
pub async fn revoke<S: CertificateStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    sha256: &Sha256Hex,
) -> Result<IssuedCertificateInfo, ApiError> {
    let all = store.list_certificates(actor.org(), None).await?;
    let cert = all.iter().find(|c| &c.sha256 == sha256).ok_or_else(|| ApiError::not_found("certificate"))?;
    if !is_own(cert, actor) {
        actor.authorize(Action::CertificateRevoke, &Target::organization(actor.org())).await?;
    }
    let event = actor.event(certificate_revoked(cert));
    Ok(store.revoke_certificate(actor.org(), &cert.sha256, event).await?)
}

/// A person's own client certificate, by her member id (never her email).
fn is_own(cert: &IssuedCertificateInfo, actor: &dyn Actor) -> bool {
    cert.kind == CertificateKind::Member && cert.subject_id == actor.member().to_string()
}

/// Records a client certificate the CA signed for the caller: any member
/// may have one (what it opens is decided per read, by the Agent).
pub async fn record_mine<S: CertificateStore + ?Sized>(
    store: &S,
    actor: &dyn Actor,
    signed: &Signed,
) -> Result<MemberCertificate, ApiError> {
    let record = MemberCertificate {
        sha256: signed.sha256.clone(),
        org_id: actor.org(),
        member_id: actor.member(),
        spki_sha256: Some(signed.spki_sha256.clone()),
        created_at: actor.now(),
        not_after: signed.not_after,
    };
    let planned = member_certificate_issued(actor.member(), &signed.sha256, signed.not_after);
    store.add_member_certificate(&record, actor.event(planned)).await?;
    Ok(record)
}
