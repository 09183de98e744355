//! Query text and row mapping shared by PostgreSQL and SQLite.

use async_trait::async_trait;
use heimdall_core::domain::{
    AuditEvent, CatalogEntry, CatalogKind, Member, Organization, Policy, PolicyVersion, Role, TokenInfo,
};
use heimdall_core::ids::{CatalogId, MemberId, OrgId, PolicyId, TokenId};
use heimdall_core::policies::PolicyWrite;
use heimdall_core::ports::{
    CatalogStore, EventQuery, EventStore, MemberStore, MetadataStore, NewEvent, NewToken, PolicyStore,
    SignInStore, StoreError, StoreResult, TokenStore,
};
use heimdall_core::token::TokenHash;
use sqlx::{Any, FromRow, Transaction};
use time::OffsetDateTime;

use super::events::insert_event;
use super::sql::{db_err, from_micros, is_unique_violation, parse_id, to_micros, unique_as, SqlStore};
use super::Backend;

// ---- rows --------------------------------------------------------------------

#[derive(FromRow)]
struct OrgRow {
    id: String,
    name: String,
    created_at: i64,
}

impl OrgRow {
    fn into_domain(self) -> StoreResult<Organization> {
        Ok(Organization {
            id: parse_id(&self.id)?,
            name: self.name,
            created_at: from_micros(self.created_at),
        })
    }
}

const MEMBER_COLUMNS: &str = "id, org_id, email, role, created_at";

#[derive(FromRow)]
struct MemberRow {
    id: String,
    org_id: String,
    email: String,
    role: String,
    created_at: i64,
}

impl MemberRow {
    fn into_domain(self) -> StoreResult<Member> {
        Ok(Member {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            email: self.email,
            role: self.role.parse().map_err(StoreError::Backend)?,
            created_at: from_micros(self.created_at),
        })
    }
}

const TOKEN_COLUMNS: &str = "id, member_id, name, created_at, revoked_at, expires_at";

#[derive(FromRow)]
struct TokenRow {
    id: String,
    member_id: String,
    name: String,
    created_at: i64,
    revoked_at: Option<i64>,
    expires_at: Option<i64>,
}

impl TokenRow {
    fn into_domain(self) -> StoreResult<TokenInfo> {
        Ok(TokenInfo {
            id: parse_id(&self.id)?,
            member_id: parse_id(&self.member_id)?,
            name: self.name,
            created_at: from_micros(self.created_at),
            revoked_at: self.revoked_at.map(from_micros),
            expires_at: self.expires_at.map(from_micros),
        })
    }
}

const CATALOG_COLUMNS: &str = "id, org_id, kind, name, description, parent_id, created_at, created_by";

#[derive(FromRow)]
struct CatalogRow {
    id: String,
    org_id: String,
    kind: String,
    name: String,
    description: String,
    parent_id: Option<String>,
    created_at: i64,
    created_by: String,
}

impl CatalogRow {
    fn into_domain(self) -> StoreResult<CatalogEntry> {
        Ok(CatalogEntry {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            kind: self.kind.parse().map_err(StoreError::Backend)?,
            name: self.name,
            description: self.description,
            parent_id: self.parent_id.as_deref().map(parse_id).transpose()?,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
        })
    }
}

#[derive(FromRow)]
struct EventRow {
    id: String,
    org_id: String,
    at: i64,
    actor: String,
    action: String,
    target: String,
    detail: String,
}

impl EventRow {
    fn into_domain(self) -> StoreResult<AuditEvent> {
        Ok(AuditEvent {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            at: from_micros(self.at),
            actor: self.actor,
            action: self.action,
            target: self.target,
            target_name: None,
            detail: serde_json::from_str(&self.detail).unwrap_or(serde_json::Value::Null),
        })
    }
}

// ---- member helpers used inside transactions ---------------------------------

async fn active_member(tx: &mut Transaction<'_, Any>, org: OrgId, id: MemberId) -> StoreResult<Member> {
    let sql =
        format!("SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = $1 AND id = $2 AND removed_at IS NULL");
    sqlx::query_as::<_, MemberRow>(&sql)
        .bind(org.to_string())
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or(StoreError::NotFound("member"))?
        .into_domain()
}

/// Counts owners, locking their rows on PostgreSQL so that two concurrent
/// demotions serialize (SQLite is serial already).
async fn count_owners(tx: &mut Transaction<'_, Any>, backend: Backend, org: OrgId) -> StoreResult<u64> {
    let sql = match backend {
        Backend::Postgres => {
            "SELECT id FROM members WHERE org_id = $1 AND role = 'owner' AND removed_at IS NULL FOR UPDATE"
        }
        Backend::Sqlite => {
            "SELECT id FROM members WHERE org_id = $1 AND role = 'owner' AND removed_at IS NULL"
        }
    };
    let rows: Vec<(String,)> =
        sqlx::query_as(sql).bind(org.to_string()).fetch_all(&mut **tx).await.map_err(db_err)?;
    Ok(rows.len() as u64)
}

async fn insert_token(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    member: MemberId,
    token: &NewToken,
    at: OffsetDateTime,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO api_tokens (id, org_id, member_id, name, token_hash, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token.id.to_string())
    .bind(org.to_string())
    .bind(member.to_string())
    .bind(token.name.clone())
    .bind(token.hash.as_str().to_owned())
    .bind(to_micros(at))
    .bind(token.expires_at.map(to_micros))
    .execute(&mut **tx)
    .await
    .map_err(unique_as("token"))?;
    Ok(())
}

async fn insert_member(tx: &mut Transaction<'_, Any>, member: &Member) -> StoreResult<()> {
    sqlx::query("INSERT INTO members (id, org_id, email, role, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(member.id.to_string())
        .bind(member.org_id.to_string())
        .bind(member.email.clone())
        .bind(member.role.as_str())
        .bind(to_micros(member.created_at))
        .execute(&mut **tx)
        .await
        .map_err(unique_as("member"))?;
    Ok(())
}

#[async_trait]
impl MetadataStore for SqlStore {
    async fn bootstrap(
        &self,
        org: &Organization,
        owner: &Member,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // The singleton row makes a second bootstrap fail even when two race.
        sqlx::query("INSERT INTO installation (singleton, bootstrapped_at) VALUES (1, $1)")
            .bind(to_micros(org.created_at))
            .execute(&mut *tx)
            .await
            .map_err(|e| if is_unique_violation(&e) { StoreError::AlreadyBootstrapped } else { db_err(e) })?;
        sqlx::query("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(org.id.to_string())
            .bind(org.name.clone())
            .bind(to_micros(org.created_at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_member(&mut tx, owner).await?;
        insert_token(&mut tx, org.id, owner.id, token, org.created_at).await?;
        insert_event(&mut tx, org.id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn authenticate(
        &self,
        hash: &TokenHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<(Member, Organization)>> {
        let sql = "SELECT m.id, m.org_id, m.email, m.role, m.created_at
                   FROM api_tokens t JOIN members m ON m.id = t.member_id
                   WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND m.removed_at IS NULL
                     AND (t.expires_at IS NULL OR t.expires_at > $2)";
        let Some(member) = sqlx::query_as::<_, MemberRow>(sql)
            .bind(hash.as_str().to_owned())
            .bind(to_micros(now))
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
        else {
            return Ok(None);
        };
        let member = member.into_domain()?;
        let org = sqlx::query_as::<_, OrgRow>("SELECT id, name, created_at FROM organizations WHERE id = $1")
            .bind(member.org_id.to_string())
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?
            .into_domain()?;
        Ok(Some((member, org)))
    }
}

#[async_trait]
impl SignInStore for SqlStore {
    async fn create_sign_in(
        &self,
        org: OrgId,
        member: MemberId,
        code: &TokenHash,
        expires_at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        active_member(&mut tx, org, member).await?;
        sqlx::query(
            "INSERT INTO console_sign_ins (code_hash, org_id, member_id, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(code.as_str().to_owned())
        .bind(org.to_string())
        .bind(member.to_string())
        .bind(to_micros(event.at))
        .bind(to_micros(expires_at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn redeem_sign_in(
        &self,
        code: &TokenHash,
        now: OffsetDateTime,
        token: &NewToken,
    ) -> StoreResult<Option<(Member, Organization)>> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // Used once: the update that marks it is the check, so two browsers
        // racing with one link cannot both get a session.
        let used = sqlx::query(
            "UPDATE console_sign_ins SET used_at = $2 \
             WHERE code_hash = $1 AND used_at IS NULL AND expires_at > $2",
        )
        .bind(code.as_str().to_owned())
        .bind(to_micros(now))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if used.rows_affected() != 1 {
            return Ok(None);
        }
        let (org, member): (String, String) =
            sqlx::query_as("SELECT org_id, member_id FROM console_sign_ins WHERE code_hash = $1")
                .bind(code.as_str().to_owned())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
        let (org, member): (OrgId, MemberId) = (parse_id(&org)?, parse_id(&member)?);
        let member = match active_member(&mut tx, org, member).await {
            Ok(member) => member,
            // Removed since the link was made: the link is spent, nothing more.
            Err(StoreError::NotFound(_)) => {
                tx.commit().await.map_err(db_err)?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        insert_token(&mut tx, org, member.id, token, now).await?;
        let event = NewEvent {
            id: heimdall_core::ids::EventId::from_uuid(uuid::Uuid::new_v4()),
            at: now,
            actor: member.email.clone(),
            action: heimdall_core::audit::AuditAction::ConsoleSignedIn,
            target: format!("token:{}", token.id),
            detail: serde_json::json!({ "expires_at": token.expires_at.map(to_micros) }),
        };
        insert_event(&mut tx, org, event).await?;
        let organization =
            sqlx::query_as::<_, OrgRow>("SELECT id, name, created_at FROM organizations WHERE id = $1")
                .bind(org.to_string())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?
                .into_domain()?;
        tx.commit().await.map_err(db_err)?;
        Ok(Some((member, organization)))
    }
}

#[async_trait]
impl EventStore for SqlStore {
    async fn list_events(&self, org: OrgId, query: &EventQuery) -> StoreResult<Vec<AuditEvent>> {
        let before = query.before.map_or(i64::MAX, to_micros);
        // `action` filters by prefix: `member.` matches `member.added`, ….
        let prefix = query.action_prefix.clone().unwrap_or_default();
        let limit = i64::from(query.limit.clamp(1, 1000));
        let rows = sqlx::query_as::<_, EventRow>(
            "SELECT id, org_id, at, actor, action, target, detail FROM audit_events
             WHERE org_id = $1 AND at < $2 AND substr(action, 1, length($3)) = $3
             ORDER BY at DESC, id DESC LIMIT $4",
        )
        .bind(org.to_string())
        .bind(before)
        .bind(prefix)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(EventRow::into_domain).collect()
    }

    async fn record_event(&self, org: OrgId, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl TokenStore for SqlStore {
    async fn create_token(
        &self,
        org: OrgId,
        member: MemberId,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        active_member(&mut tx, org, member).await?;
        let at = event.at;
        insert_token(&mut tx, org, member, token, at).await?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(TokenInfo {
            id: token.id,
            member_id: member,
            name: token.name.clone(),
            created_at: at,
            revoked_at: None,
            expires_at: token.expires_at,
        })
    }

    async fn list_tokens(&self, org: OrgId, member: MemberId) -> StoreResult<Vec<TokenInfo>> {
        let sql = format!(
            "SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE org_id = $1 AND member_id = $2 ORDER BY created_at, id"
        );
        sqlx::query_as::<_, TokenRow>(&sql)
            .bind(org.to_string())
            .bind(member.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(TokenRow::into_domain)
            .collect()
    }

    async fn revoke_token(
        &self,
        org: OrgId,
        member: MemberId,
        id: TokenId,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let at = to_micros(event.at);
        // Revoking twice keeps the first revocation time.
        sqlx::query(
            "UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 AND org_id = $3 AND member_id = $4",
        )
        .bind(at)
        .bind(id.to_string())
        .bind(org.to_string())
        .bind(member.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let sql = format!(
            "SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE id = $1 AND org_id = $2 AND member_id = $3"
        );
        let token = sqlx::query_as::<_, TokenRow>(&sql)
            .bind(id.to_string())
            .bind(org.to_string())
            .bind(member.to_string())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("token"))?
            .into_domain()?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(token)
    }
}

#[async_trait]
impl MemberStore for SqlStore {
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        insert_member(&mut tx, member).await?;
        insert_token(&mut tx, member.org_id, member.id, token, member.created_at).await?;
        insert_event(&mut tx, member.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>> {
        let sql = format!(
            "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = $1 AND removed_at IS NULL ORDER BY email"
        );
        sqlx::query_as::<_, MemberRow>(&sql)
            .bind(org.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(MemberRow::into_domain)
            .collect()
    }

    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let member = active_member(&mut tx, org, id).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(member)
    }

    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>> {
        let sql = format!(
            "SELECT {MEMBER_COLUMNS} FROM members WHERE org_id = $1 AND email = $2 AND removed_at IS NULL"
        );
        sqlx::query_as::<_, MemberRow>(&sql)
            .bind(org.to_string())
            .bind(email.to_owned())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .map(MemberRow::into_domain)
            .transpose()
    }

    async fn change_role(
        &self,
        org: OrgId,
        id: MemberId,
        role: Role,
        event: NewEvent,
    ) -> StoreResult<Member> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let owners = count_owners(&mut tx, self.backend, org).await?;
        let mut member = active_member(&mut tx, org, id).await?;
        heimdall_core::members::check_owner_remains(owners, member.role, Some(role))
            .map_err(StoreError::Refused)?;
        sqlx::query("UPDATE members SET role = $1 WHERE id = $2 AND org_id = $3")
            .bind(role.as_str())
            .bind(id.to_string())
            .bind(org.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        member.role = role;
        Ok(member)
    }

    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let owners = count_owners(&mut tx, self.backend, org).await?;
        let member = active_member(&mut tx, org, id).await?;
        heimdall_core::members::check_owner_remains(owners, member.role, None)
            .map_err(StoreError::Refused)?;
        let at = to_micros(event.at);
        sqlx::query("UPDATE members SET removed_at = $1 WHERE id = $2 AND org_id = $3")
            .bind(at)
            .bind(id.to_string())
            .bind(org.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // What their reads put at risk, decided with the removal.
        let reads = super::at_risk::reads_by(&mut tx, org, &member.email).await?;
        super::at_risk::mark(&mut tx, org, &reads, &event.actor, event.at).await?;
        for table in ["api_tokens", "member_certificates"] {
            sqlx::query(&format!(
                "UPDATE {table} SET revoked_at = $1 WHERE member_id = $2 AND revoked_at IS NULL"
            ))
            .bind(at)
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(member)
    }
}

#[async_trait]
impl CatalogStore for SqlStore {
    async fn create_catalog_entry(&self, entry: &CatalogEntry, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        if let Some(parent) = entry.parent_id {
            // The parent must exist in this organization and be of the right kind.
            let expected = entry.kind.parent_kind().map(CatalogKind::as_str).unwrap_or_default();
            let found: Option<(String,)> =
                sqlx::query_as("SELECT kind FROM catalog_entries WHERE id = $1 AND org_id = $2")
                    .bind(parent.to_string())
                    .bind(entry.org_id.to_string())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
            if found.as_ref().map(|(k,)| k.as_str()) != Some(expected) {
                return Err(StoreError::NotFound(match entry.kind.parent_kind() {
                    Some(CatalogKind::Domain) => "domain",
                    Some(CatalogKind::System) => "system",
                    _ => "parent",
                }));
            }
        }
        sqlx::query(
            "INSERT INTO catalog_entries (id, org_id, kind, name, description, parent_id, created_at, created_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(entry.id.to_string())
        .bind(entry.org_id.to_string())
        .bind(entry.kind.as_str())
        .bind(entry.name.clone())
        .bind(entry.description.clone())
        .bind(entry.parent_id.map(|p| p.to_string()))
        .bind(to_micros(entry.created_at))
        .bind(entry.created_by.clone())
        .execute(&mut *tx)
        .await
        .map_err(unique_as(entry.kind.as_str()))?;
        insert_event(&mut tx, entry.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_catalog(
        &self,
        org: OrgId,
        kind: CatalogKind,
        parent: Option<CatalogId>,
    ) -> StoreResult<Vec<CatalogEntry>> {
        let rows = match parent {
            Some(parent) => {
                let sql = format!(
                    "SELECT {CATALOG_COLUMNS} FROM catalog_entries WHERE org_id = $1 AND kind = $2 AND parent_id = $3 ORDER BY name, id"
                );
                sqlx::query_as::<_, CatalogRow>(&sql)
                    .bind(org.to_string())
                    .bind(kind.as_str())
                    .bind(parent.to_string())
                    .fetch_all(&self.pool)
                    .await
            }
            None => {
                let sql = format!(
                    "SELECT {CATALOG_COLUMNS} FROM catalog_entries WHERE org_id = $1 AND kind = $2 ORDER BY name, id"
                );
                sqlx::query_as::<_, CatalogRow>(&sql)
                    .bind(org.to_string())
                    .bind(kind.as_str())
                    .fetch_all(&self.pool)
                    .await
            }
        };
        rows.map_err(db_err)?.into_iter().map(CatalogRow::into_domain).collect()
    }

    async fn get_catalog_entry(&self, org: OrgId, id: CatalogId) -> StoreResult<CatalogEntry> {
        let sql = format!("SELECT {CATALOG_COLUMNS} FROM catalog_entries WHERE org_id = $1 AND id = $2");
        sqlx::query_as::<_, CatalogRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("catalog entry"))?
            .into_domain()
    }

    async fn find_catalog_by_name(
        &self,
        org: OrgId,
        kind: CatalogKind,
        name: &str,
    ) -> StoreResult<Vec<CatalogEntry>> {
        let sql = format!(
            "SELECT {CATALOG_COLUMNS} FROM catalog_entries WHERE org_id = $1 AND kind = $2 AND name = $3 ORDER BY id"
        );
        sqlx::query_as::<_, CatalogRow>(&sql)
            .bind(org.to_string())
            .bind(kind.as_str())
            .bind(name.to_owned())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .into_iter()
            .map(CatalogRow::into_domain)
            .collect()
    }

    async fn rename_catalog_entry(
        &self,
        org: OrgId,
        id: CatalogId,
        name: &str,
        event: NewEvent,
    ) -> StoreResult<CatalogEntry> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let sql = format!("SELECT {CATALOG_COLUMNS} FROM catalog_entries WHERE org_id = $1 AND id = $2");
        let mut entry = sqlx::query_as::<_, CatalogRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("catalog entry"))?
            .into_domain()?;
        sqlx::query("UPDATE catalog_entries SET name = $1 WHERE org_id = $2 AND id = $3")
            .bind(name.to_owned())
            .bind(org.to_string())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(unique_as(entry.kind.as_str()))?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        entry.name = name.to_owned();
        Ok(entry)
    }

    async fn delete_catalog_entry(&self, org: OrgId, id: CatalogId, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let kind: Option<(String,)> =
            sqlx::query_as("SELECT kind FROM catalog_entries WHERE org_id = $1 AND id = $2")
                .bind(org.to_string())
                .bind(id.to_string())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
        let Some((kind,)) = kind else {
            return Err(StoreError::NotFound("catalog entry"));
        };
        let children: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM catalog_entries WHERE parent_id = $1 ORDER BY name LIMIT 3")
                .bind(id.to_string())
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
        if !children.is_empty() {
            let kind: CatalogKind = kind.parse().map_err(StoreError::Backend)?;
            let child = kind.child_kind().map_or("entry", CatalogKind::as_str);
            let names: Vec<&str> = children.iter().map(|(n,)| n.as_str()).collect();
            return Err(StoreError::NotEmpty(format!(
                "this {kind} still contains a {child} ({}); delete those first",
                names.join(", ")
            )));
        }
        // Anything else that points at the entry keeps it too.
        let (uses,): (i64,) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM resources WHERE component_id = $1 OR environment_id = $1)
                  + (SELECT COUNT(*) FROM cloud_account_links WHERE scope_id = $1 OR environment_id = $1)
                  + (SELECT COUNT(*) FROM secret_components WHERE component_id = $1)
                  + (SELECT COUNT(*) FROM secret_versions WHERE environment_id = $1)
                  + (SELECT COUNT(*) FROM environment_agents WHERE environment_id = $1)",
        )
        .bind(id.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        if uses > 0 {
            return Err(StoreError::NotEmpty(format!(
                "this {kind} is still used by {uses} resource(s), account link(s), secret(s) or Agent assignment(s)"
            )));
        }
        sqlx::query("DELETE FROM catalog_entries WHERE org_id = $1 AND id = $2")
            .bind(org.to_string())
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl PolicyStore for SqlStore {
    async fn create_policy(&self, policy: &Policy, event: NewEvent) -> StoreResult<()> {
        super::policies::create(&self.pool, policy, event).await
    }

    async fn policy_version(&self, org: OrgId) -> StoreResult<i64> {
        let row: Option<(i64,)> = sqlx::query_as("SELECT policy_version FROM organizations WHERE id = $1")
            .bind(org.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        row.map(|(v,)| v).ok_or(StoreError::NotFound("organization"))
    }

    async fn list_policies(&self, org: OrgId) -> StoreResult<Vec<Policy>> {
        super::policies::list(&self.pool, org).await
    }

    async fn get_policy(&self, org: OrgId, id: PolicyId) -> StoreResult<Policy> {
        super::policies::get(&self.pool, org, id).await
    }

    async fn delete_policy(&self, org: OrgId, id: PolicyId, event: NewEvent) -> StoreResult<()> {
        super::policies::delete(&self.pool, org, id, event).await
    }

    async fn update_policy(&self, write: &PolicyWrite, event: NewEvent) -> StoreResult<()> {
        super::policies::update(&self.pool, write, event).await
    }

    async fn policy_versions(&self, org: OrgId, id: PolicyId) -> StoreResult<Vec<PolicyVersion>> {
        super::policies::versions(&self.pool, org, id).await
    }
}
