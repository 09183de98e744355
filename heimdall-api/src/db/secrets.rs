//! Secret metadata, versions and environment assignments.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use heimdall_core::ids::{CatalogId, MemberId, OrgId, SecretId};
use heimdall_core::ports::{
    CertificateStore, NewEvent, SecretRecordStore, SecretStore, StoreError, StoreResult, VersionStore,
};
use heimdall_core::retention::Overlap;
use heimdall_core::secrets::{
    AgentCertificate, CertificateKind, IssuedCertificateInfo, MemberCertificate, Secret, SecretVersion,
    VersionAsked,
};
use heimdall_core::Sha256Hex;
use sqlx::{Any, FromRow, Transaction};
use time::OffsetDateTime;

use super::events::insert_event;
use super::sql::{
    db_err, from_micros, is_unique_violation, parse_id, parse_sha256, to_micros, unique_as, SqlStore,
};

const VERSION_COLUMNS: &str = "v.secret_id, v.environment_id, v.version, v.created_at, v.created_by, \
     v.deactivated_at, v.keep_previous_seconds";

type VersionRow = (String, String, i64, i64, String, Option<i64>, i64);

fn version_from_row(row: VersionRow) -> StoreResult<SecretVersion> {
    let (secret_id, env, version, created_at, created_by, deactivated_at, keep_previous_seconds) = row;
    Ok(SecretVersion {
        secret_id: parse_id(&secret_id)?,
        environment_id: parse_id(&env)?,
        version,
        created_at: from_micros(created_at),
        created_by,
        deactivated_at: deactivated_at.map(from_micros),
        keep_previous_seconds,
        superseded_at: None,
    })
}

async fn fetch_version(
    tx: &mut Transaction<'_, Any>,
    org: OrgId,
    secret: SecretId,
    environment: CatalogId,
    version: i64,
) -> StoreResult<Option<SecretVersion>> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM secret_versions v JOIN secrets s ON s.id = v.secret_id \
         WHERE s.org_id = $1 AND v.secret_id = $2 AND v.environment_id = $3 AND v.version = $4"
    );
    let row: Option<VersionRow> = sqlx::query_as(&sql)
        .bind(org.to_string())
        .bind(secret.to_string())
        .bind(environment.to_string())
        .bind(version)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?;
    row.map(version_from_row).transpose()
}

const SECRET_COLUMNS: &str = "id, org_id, name, secret_type, description, tags, personal_owner, \
     personal_owner_id, created_at, created_by, updated_at";

#[derive(FromRow)]
struct SecretRow {
    id: String,
    org_id: String,
    name: String,
    secret_type: String,
    description: String,
    tags: String,
    personal_owner: Option<String>,
    personal_owner_id: Option<String>,
    created_at: i64,
    created_by: String,
    updated_at: i64,
    lifecycle: String,
    deleted_name: Option<String>,
    deleted_at: Option<i64>,
}

impl SecretRow {
    /// The secret, with what other tables hold of it; its status follows
    /// from its lifecycle and its marks.
    fn into_domain(
        self,
        components: Vec<CatalogId>,
        owner_keys: Vec<Sha256Hex>,
        at_risk: Vec<heimdall_core::secrets::AtRisk>,
    ) -> StoreResult<Secret> {
        let lifecycle = heimdall_core::deletion::Lifecycle::parse(&self.lifecycle)
            .ok_or_else(|| StoreError::Backend(format!("unknown stored lifecycle {:?}", self.lifecycle)))?;
        let status = heimdall_core::secrets::SecretStatus::of(lifecycle, !at_risk.is_empty());
        // Only a personal secret has keys bound to it.
        let owner_keys = if self.personal_owner_id.is_some() { owner_keys } else { Vec::new() };
        let tags: BTreeMap<String, String> =
            serde_json::from_str(&self.tags).map_err(|e| StoreError::Backend(format!("stored tags: {e}")))?;
        Ok(Secret {
            id: parse_id(&self.id)?,
            org_id: parse_id(&self.org_id)?,
            // A deleted secret whose name was taken again keeps showing its own.
            name: self.deleted_name.unwrap_or(self.name),
            secret_type: self.secret_type,
            description: self.description,
            tags,
            components,
            personal_owner: self.personal_owner,
            owner_id: self.personal_owner_id.as_deref().map(parse_id).transpose()?,
            owner_keys,
            created_at: from_micros(self.created_at),
            created_by: self.created_by,
            updated_at: from_micros(self.updated_at),
            at_risk,
            status,
            deleted_at: self.deleted_at.map(from_micros),
        })
    }
}

fn tags_json(secret: &Secret) -> StoreResult<String> {
    serde_json::to_string(&secret.tags).map_err(|e| StoreError::Backend(e.to_string()))
}

async fn bind_key(
    tx: &mut Transaction<'_, Any>,
    secret: SecretId,
    spki_sha256: &Sha256Hex,
    at: OffsetDateTime,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO personal_secret_keys (secret_id, spki_sha256, added_at) VALUES ($1, $2, $3) \
         ON CONFLICT (secret_id, spki_sha256) DO NOTHING",
    )
    .bind(secret.to_string())
    .bind(spki_sha256.as_str())
    .bind(to_micros(at))
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

async fn set_components(tx: &mut Transaction<'_, Any>, secret: &Secret) -> StoreResult<()> {
    sqlx::query("DELETE FROM secret_components WHERE secret_id = $1")
        .bind(secret.id.to_string())
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    for component in &secret.components {
        sqlx::query("INSERT INTO secret_components (secret_id, component_id) VALUES ($1, $2)")
            .bind(secret.id.to_string())
            .bind(component.to_string())
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

impl SqlStore {
    async fn components_of(&self, secret: &str) -> StoreResult<Vec<CatalogId>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT component_id FROM secret_components WHERE secret_id = $1 ORDER BY component_id",
        )
        .bind(secret.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|(id,)| parse_id(id)).collect()
    }

    async fn owner_keys_of(&self, secret: &str) -> StoreResult<Vec<Sha256Hex>> {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT spki_sha256 FROM personal_secret_keys WHERE secret_id = $1 ORDER BY added_at, spki_sha256",
        )
        .bind(secret.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|(k,)| parse_sha256(k)).collect()
    }

    async fn hydrate(&self, row: SecretRow) -> StoreResult<Secret> {
        let components = self.components_of(&row.id).await?;
        let owner_keys =
            if row.personal_owner_id.is_some() { self.owner_keys_of(&row.id).await? } else { Vec::new() };
        let at_risk = super::at_risk::of_secret(&self.pool, &row.id).await?;
        row.into_domain(components, owner_keys, at_risk)
    }
}

type CertificateRow = (String, String, Option<String>, i64, i64);

#[derive(FromRow)]
struct IssuedRow {
    sha256: String,
    kind: String,
    subject_id: String,
    subject: String,
    created_at: i64,
    not_after: i64,
    revoked_at: Option<i64>,
}

impl IssuedRow {
    fn into_domain(self) -> StoreResult<IssuedCertificateInfo> {
        Ok(IssuedCertificateInfo {
            sha256: parse_sha256(&self.sha256)?,
            kind: match self.kind.as_str() {
                "member" => CertificateKind::Member,
                _ => CertificateKind::AgentServer,
            },
            subject_id: self.subject_id,
            subject: self.subject,
            created_at: from_micros(self.created_at),
            not_after: from_micros(self.not_after),
            revoked_at: self.revoked_at.map(from_micros),
        })
    }
}

fn certificate_from_row(org: OrgId, row: CertificateRow) -> StoreResult<MemberCertificate> {
    let (sha256, member, spki_sha256, created_at, not_after) = row;
    Ok(MemberCertificate {
        sha256: parse_sha256(&sha256)?,
        org_id: org,
        member_id: parse_id(&member)?,
        spki_sha256: spki_sha256.as_deref().map(parse_sha256).transpose()?,
        created_at: from_micros(created_at),
        not_after: from_micros(not_after),
    })
}

#[async_trait]
impl SecretRecordStore for SqlStore {
    async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        insert_secret(&mut tx, secret).await?;
        insert_event(&mut tx, secret.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
        let sql = format!("SELECT {SECRET_COLUMNS}, lifecycle, deleted_name, deleted_at FROM secrets WHERE org_id = $1 AND id = $2");
        let row = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or(StoreError::NotFound("secret"))?;
        self.hydrate(row).await
    }

    async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
        let sql = format!("SELECT {SECRET_COLUMNS}, lifecycle, deleted_name, deleted_at FROM secrets WHERE org_id = $1 AND name = $2");
        let row = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .bind(name.to_owned())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        match row {
            Some(row) => Ok(Some(self.hydrate(row).await?)),
            None => Ok(None),
        }
    }

    async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let updated = sqlx::query(
            "UPDATE secrets SET secret_type = $1, description = $2, tags = $3, updated_at = $4 WHERE org_id = $5 AND id = $6",
        )
        .bind(secret.secret_type.clone())
        .bind(secret.description.clone())
        .bind(tags_json(secret)?)
        .bind(to_micros(secret.updated_at))
        .bind(secret.org_id.to_string())
        .bind(secret.id.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound("secret"));
        }
        set_components(&mut tx, secret).await?;
        insert_event(&mut tx, secret.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn list_versions(&self, org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM secret_versions v JOIN secrets s ON s.id = v.secret_id \
             WHERE s.org_id = $1 AND v.secret_id = $2 ORDER BY v.environment_id, v.version"
        );
        let rows: Vec<VersionRow> = sqlx::query_as(&sql)
            .bind(org.to_string())
            .bind(secret.to_string())
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.into_iter().map(version_from_row).collect()
    }

    async fn deactivate_version(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        version: i64,
        event: NewEvent,
    ) -> StoreResult<SecretVersion> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let Some(found) = fetch_version(&mut tx, org, secret, environment, version).await? else {
            return Err(StoreError::NotFound("version"));
        };
        if found.deactivated_at.is_some() {
            return Ok(found);
        }
        sqlx::query(
            "UPDATE secret_versions SET deactivated_at = $1 \
             WHERE secret_id = $2 AND environment_id = $3 AND version = $4 AND deactivated_at IS NULL",
        )
        .bind(to_micros(event.at))
        .bind(secret.to_string())
        .bind(environment.to_string())
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_event(&mut tx, org, event).await?;
        let updated = fetch_version(&mut tx, org, secret, environment, version).await?;
        tx.commit().await.map_err(db_err)?;
        updated.ok_or(StoreError::NotFound("version"))
    }

    async fn list_secrets_page(
        &self,
        org: OrgId,
        after: Option<&heimdall_core::secrets::SecretCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Secret>> {
        // After the cursor: a greater name (unique in the organization and
        // never empty, so `''` comes before the first), along the index of
        // UNIQUE (org_id, name).
        const PAGE: &str = "SELECT id FROM secrets WHERE org_id = $1 AND name > $2 ORDER BY name LIMIT $3";
        let after_name = after.map_or_else(String::new, |c| c.name.clone());
        let sql = format!(
            "SELECT {SECRET_COLUMNS}, lifecycle, deleted_name, deleted_at FROM secrets WHERE id IN ({PAGE}) ORDER BY name"
        );
        let rows = sqlx::query_as::<_, SecretRow>(&sql)
            .bind(org.to_string())
            .bind(after_name.clone())
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        // Components, keys and marks of the page's secrets in three queries,
        // not three per secret.
        let org_id = org.to_string();
        let mut components: HashMap<String, Vec<CatalogId>> = HashMap::new();
        let rows_c: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT c.secret_id, c.component_id FROM secret_components c \
             WHERE c.secret_id IN ({PAGE}) ORDER BY c.secret_id, c.component_id"
        ))
        .bind(org_id.clone())
        .bind(after_name.clone())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        for (secret, component) in rows_c {
            components.entry(secret).or_default().push(parse_id(&component)?);
        }
        let mut keys: HashMap<String, Vec<Sha256Hex>> = HashMap::new();
        let rows_k: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT k.secret_id, k.spki_sha256 FROM personal_secret_keys k \
             WHERE k.secret_id IN ({PAGE}) ORDER BY k.secret_id, k.added_at, k.spki_sha256"
        ))
        .bind(org_id.clone())
        .bind(after_name)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        for (secret, key) in rows_k {
            keys.entry(secret).or_default().push(parse_sha256(&key)?);
        }
        let mut risks = super::at_risk::of_org(&self.pool, &org_id).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let id = row.id.clone();
            let (components, owner_keys, at_risk) = (
                components.remove(&id).unwrap_or_default(),
                keys.remove(&id).unwrap_or_default(),
                risks.remove(&id).unwrap_or_default(),
            );
            out.push(row.into_domain(components, owner_keys, at_risk)?);
        }
        Ok(out)
    }
}

#[async_trait]
impl CertificateStore for SqlStore {
    async fn add_member_certificate(&self, cert: &MemberCertificate, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO member_certificates (sha256, org_id, member_id, spki_sha256, created_at, not_after) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(cert.sha256.as_str())
        .bind(cert.org_id.to_string())
        .bind(cert.member_id.to_string())
        .bind(cert.spki_sha256.as_ref().map(|k| k.as_str().to_owned()))
        .bind(to_micros(cert.created_at))
        .bind(to_micros(cert.not_after))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("certificate"))?;
        insert_event(&mut tx, cert.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn active_member_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<MemberCertificate>> {
        let rows: Vec<CertificateRow> = sqlx::query_as(
            "SELECT c.sha256, c.member_id, c.spki_sha256, c.created_at, c.not_after FROM member_certificates c \
             JOIN members m ON m.id = c.member_id \
             WHERE c.org_id = $1 AND c.revoked_at IS NULL AND c.not_after > $2 AND m.removed_at IS NULL \
             ORDER BY c.created_at",
        )
        .bind(org.to_string())
        .bind(to_micros(now))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(|row| certificate_from_row(org, row)).collect()
    }

    async fn add_agent_certificate(&self, cert: &AgentCertificate, event: NewEvent) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO agent_certificates (sha256, org_id, agent_id, names, created_at, not_after) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(cert.sha256.as_str())
        .bind(cert.org_id.to_string())
        .bind(cert.agent_id.to_string())
        .bind(serde_json::to_string(&cert.names).map_err(|e| StoreError::Backend(e.to_string()))?)
        .bind(to_micros(cert.created_at))
        .bind(to_micros(cert.not_after))
        .execute(&mut *tx)
        .await
        .map_err(unique_as("certificate"))?;
        insert_event(&mut tx, cert.org_id, event).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn active_agent_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AgentCertificate>> {
        let rows: Vec<(String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT c.sha256, c.agent_id, c.names, c.created_at, c.not_after FROM agent_certificates c \
             JOIN agents a ON a.id = c.agent_id \
             WHERE c.org_id = $1 AND c.revoked_at IS NULL AND c.not_after > $2 AND a.revoked_at IS NULL \
             ORDER BY c.created_at",
        )
        .bind(org.to_string())
        .bind(to_micros(now))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(sha256, agent, names, created_at, not_after)| {
                Ok(AgentCertificate {
                    sha256: parse_sha256(&sha256)?,
                    org_id: org,
                    agent_id: parse_id(&agent)?,
                    names: serde_json::from_str(&names).map_err(|e| StoreError::Backend(e.to_string()))?,
                    created_at: from_micros(created_at),
                    not_after: from_micros(not_after),
                })
            })
            .collect()
    }

    async fn list_certificates(
        &self,
        org: OrgId,
        member: Option<MemberId>,
    ) -> StoreResult<Vec<IssuedCertificateInfo>> {
        let mut sql = String::from(
            "SELECT c.sha256, 'member' AS kind, c.member_id AS subject_id, m.email AS subject, c.created_at, c.not_after, c.revoked_at \
             FROM member_certificates c JOIN members m ON m.id = c.member_id WHERE c.org_id = $1",
        );
        if member.is_some() {
            sql.push_str(" AND c.member_id = $2");
        } else {
            sql.push_str(
                " UNION ALL SELECT c.sha256, 'agent_server' AS kind, c.agent_id AS subject_id, a.name AS subject, \
                 c.created_at, c.not_after, c.revoked_at FROM agent_certificates c JOIN agents a ON a.id = c.agent_id \
                 WHERE c.org_id = $1",
            );
        }
        let sql = format!("SELECT * FROM ({sql}) certs ORDER BY created_at DESC, sha256");
        let mut query = sqlx::query_as::<_, IssuedRow>(&sql).bind(org.to_string());
        if let Some(member) = member {
            query = query.bind(member.to_string());
        }
        let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
        rows.into_iter().map(IssuedRow::into_domain).collect()
    }

    async fn revoke_certificate(
        &self,
        org: OrgId,
        sha256: &Sha256Hex,
        event: NewEvent,
    ) -> StoreResult<IssuedCertificateInfo> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let at = to_micros(event.at);
        let mut changed = 0;
        for table in ["member_certificates", "agent_certificates"] {
            changed += sqlx::query(&format!(
                "UPDATE {table} SET revoked_at = COALESCE(revoked_at, $1) WHERE org_id = $2 AND sha256 = $3"
            ))
            .bind(at)
            .bind(org.to_string())
            .bind(sha256.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
        }
        if changed == 0 {
            return Err(StoreError::NotFound("certificate"));
        }
        insert_event(&mut tx, org, event).await?;
        tx.commit().await.map_err(db_err)?;
        self.list_certificates(org, None)
            .await?
            .into_iter()
            .find(|c| &c.sha256 == sha256)
            .ok_or(StoreError::NotFound("certificate"))
    }
}

#[async_trait]
impl SecretStore for SqlStore {
    async fn secret_changes(
        &self,
        org: OrgId,
        known: Option<i64>,
    ) -> StoreResult<heimdall_core::ports::SecretChanges> {
        super::sync_secrets::secret_changes(&self.pool, org, known).await
    }

    async fn start_sync_epoch(&self) -> StoreResult<()> {
        super::sync_secrets::start_sync_epoch(&self.pool).await
    }

    async fn version_overlaps(
        &self,
        org: OrgId,
        wanted: &[(&str, CatalogId)],
    ) -> StoreResult<Vec<(String, CatalogId, Overlap)>> {
        let pairs: std::collections::HashSet<(&str, CatalogId)> = wanted.iter().copied().collect();
        let mut names: Vec<&str> = wanted.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        let mut found = Vec::new();
        // A bounded IN list per query: a backfill can ask for thousands.
        for chunk in names.chunks(500) {
            let placeholders: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT s.name, v.environment_id, v.version, v.created_at, v.keep_previous_seconds \
                 FROM secret_versions v JOIN secrets s ON s.id = v.secret_id \
                 WHERE s.org_id = $1 AND s.lifecycle = 'active' AND s.name IN ({})",
                placeholders.join(", ")
            );
            let mut query = sqlx::query_as::<_, (String, String, i64, i64, i64)>(&sql).bind(org.to_string());
            for name in chunk {
                query = query.bind(*name);
            }
            for (name, env, version, created_at, keep) in query.fetch_all(&self.pool).await.map_err(db_err)? {
                let environment: CatalogId = parse_id(&env)?;
                if !pairs.contains(&(name.as_str(), environment)) {
                    continue;
                }
                let overlap = Overlap::stored(version, from_micros(created_at), keep);
                found.push((name, environment, overlap));
            }
        }
        Ok(found)
    }
}

#[async_trait]
impl VersionStore for SqlStore {
    async fn create_version(
        &self,
        org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        asked: VersionAsked<'_>,
        event: NewEvent,
    ) -> StoreResult<SecretVersion> {
        let VersionAsked { created_by, bind, keep_previous } = asked;
        // Two writers can read the same MAX at once (PostgreSQL, read
        // committed); the primary key refuses the second insert and it
        // takes the next number.
        for _ in 0..5 {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            // Numbering goes on past a deleted secret of the same name, so no
            // Agent ever holds two values under one (name, environment, version).
            let (next,): (i64,) = sqlx::query_as(
                "SELECT COALESCE(MAX(v.version), 0) + 1 FROM secret_versions v JOIN secrets s ON s.id = v.secret_id \
                 WHERE s.org_id = $1 AND v.environment_id = $3 AND (v.secret_id = $2 OR s.deleted_name = \
                 (SELECT name FROM secrets WHERE id = $2))",
            )
            .bind(org.to_string())
            .bind(secret.to_string())
            .bind(environment.to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            let inserted = sqlx::query(
                "INSERT INTO secret_versions (secret_id, environment_id, version, created_at, created_by, \
                 keep_previous_seconds) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(secret.to_string())
            .bind(environment.to_string())
            .bind(next)
            .bind(to_micros(event.at))
            .bind(created_by)
            .bind(keep_previous.whole_seconds())
            .execute(&mut *tx)
            .await;
            match inserted {
                Err(e) if is_unique_violation(&e) => continue,
                Err(e) => return Err(db_err(e)),
                Ok(_) => {}
            }
            let at = event.at;
            if let Some(key) = bind {
                bind_key(&mut tx, secret, key, at).await?;
            }
            super::at_risk::clear(&mut tx, &secret.to_string(), &environment.to_string()).await?;
            // Deleted there before: a new version makes it live there again.
            sqlx::query(
                "DELETE FROM secret_environment_deletions WHERE secret_id = $1 AND environment_id = $2 AND lifecycle = 'deleted'",
            )
            .bind(secret.to_string())
            .bind(environment.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            insert_event(&mut tx, org, event).await?;
            tx.commit().await.map_err(db_err)?;
            return Ok(SecretVersion {
                secret_id: secret,
                environment_id: environment,
                version: next,
                created_at: from_micros(to_micros(at)),
                created_by: created_by.to_owned(),
                deactivated_at: None,
                keep_previous_seconds: keep_previous.whole_seconds(),
                superseded_at: None,
            });
        }
        Err(StoreError::Conflict("too many concurrent writers of this secret; try again".into()))
    }

    async fn deactivated_versions(&self, org: OrgId) -> StoreResult<Vec<(String, CatalogId, i64)>> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT s.name, v.environment_id, v.version FROM secret_versions v JOIN secrets s ON s.id = v.secret_id \
             WHERE s.org_id = $1 AND v.deactivated_at IS NOT NULL ORDER BY s.name, v.environment_id, v.version",
        )
        .bind(org.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.into_iter().map(|(name, env, version)| Ok((name, parse_id(&env)?, version))).collect()
    }
}

/// Inserts `secret` in the caller's transaction; a deleted secret of the
/// same name gives its name up to it (and stays as history).
pub(super) async fn insert_secret(tx: &mut Transaction<'_, Any>, secret: &Secret) -> StoreResult<()> {
    sqlx::query(
        "UPDATE secrets SET deleted_name = name, name = name || '#deleted-' || id \
         WHERE org_id = $1 AND name = $2 AND lifecycle = 'deleted'",
    )
    .bind(secret.org_id.to_string())
    .bind(secret.name.clone())
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query(&format!(
        "INSERT INTO secrets ({SECRET_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(secret.id.to_string())
    .bind(secret.org_id.to_string())
    .bind(secret.name.clone())
    .bind(secret.secret_type.clone())
    .bind(secret.description.clone())
    .bind(tags_json(secret)?)
    .bind(secret.personal_owner.clone())
    .bind(secret.owner_id.map(|id| id.to_string()))
    .bind(to_micros(secret.created_at))
    .bind(secret.created_by.clone())
    .bind(to_micros(secret.updated_at))
    .execute(&mut **tx)
    .await
    .map_err(unique_as("secret"))?;
    set_components(tx, secret).await?;
    for key in &secret.owner_keys {
        bind_key(tx, secret.id, key, secret.created_at).await?;
    }
    Ok(())
}
