use super::*;

catalog_beside!(MemorySecrets, catalog);

/// The secrets' records in memory beside a catalog (the Components they
/// are under) and the members' certificates: names unique in the
/// organization (a personal secret's is kept under its owner's id), and a
/// certificate active until its `not_after`.
#[derive(Default)]
pub struct MemorySecrets {
    pub catalog: MemoryCatalog,
    pub certificates: Mutex<Vec<MemberCertificate>>,
    /// Version numbers, as Agents' writes make them.
    pub versions: Mutex<Vec<SecretVersion>>,
    /// Agents' local-API certificates, as their renewals store them.
    pub agent_certificates: Mutex<Vec<AgentCertificate>>,
    revoked: Mutex<Vec<Sha256Hex>>,
    secrets: Mutex<Vec<Secret>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemorySecrets {
    pub fn with_catalog(entries: &[CatalogEntry]) -> Self {
        Self { catalog: MemoryCatalog::with(entries), ..Self::default() }
    }

    pub fn secrets(&self) -> Vec<Secret> {
        self.secrets.lock().unwrap().clone()
    }

    /// What the store does as a secret's deletion starts: it goes
    /// `deleting`, once.
    pub fn start_deleting(&self, secret: SecretId) -> StoreResult<()> {
        let mut secrets = self.secrets.lock().unwrap();
        let found = secrets.iter_mut().find(|s| s.id == secret).ok_or(StoreError::NotFound("secret"))?;
        if found.status == SecretStatus::Deleting {
            return Err(StoreError::Conflict("the secret is already being deleted".into()));
        }
        found.status = SecretStatus::Deleting;
        Ok(())
    }

    /// Stores `secret` unless its name is taken (what another store's
    /// transaction does with it).
    pub fn keep(&self, secret: &Secret) -> StoreResult<()> {
        let mut secrets = self.secrets.lock().unwrap();
        if secrets.iter().any(|s| s.org_id == secret.org_id && s.name == secret.name) {
            return Err(StoreError::AlreadyExists("secret"));
        }
        secrets.push(secret.clone());
        Ok(())
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl SecretRecordStore for MemorySecrets {
    async fn list_secrets_page(
        &self,
        org: OrgId,
        after: Option<&SecretCursor>,
        limit: u32,
    ) -> StoreResult<Vec<Secret>> {
        let mut page: Vec<Secret> =
            self.secrets.lock().unwrap().iter().filter(|s| s.org_id == org).cloned().collect();
        page.sort_by(|a, b| a.name.cmp(&b.name));
        page.retain(|s| after.is_none_or(|c| s.name > c.name));
        page.truncate(limit as usize);
        Ok(page)
    }

    async fn create_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        self.keep(secret)?;
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn get_secret(&self, org: OrgId, id: SecretId) -> StoreResult<Secret> {
        let secrets = self.secrets.lock().unwrap();
        secrets.iter().find(|s| s.org_id == org && s.id == id).cloned().ok_or(StoreError::NotFound("secret"))
    }

    async fn find_secret_by_name(&self, org: OrgId, name: &str) -> StoreResult<Option<Secret>> {
        Ok(self.secrets.lock().unwrap().iter().find(|s| s.org_id == org && s.name == name).cloned())
    }

    async fn list_versions(&self, _org: OrgId, secret: SecretId) -> StoreResult<Vec<SecretVersion>> {
        Ok(self.versions.lock().unwrap().iter().filter(|v| v.secret_id == secret).cloned().collect())
    }

    async fn deactivate_version(
        &self,
        _org: OrgId,
        secret: SecretId,
        environment: CatalogId,
        version: i64,
        event: NewEvent,
    ) -> StoreResult<SecretVersion> {
        let mut versions = self.versions.lock().unwrap();
        let that = |v: &&mut SecretVersion| {
            v.secret_id == secret && v.environment_id == environment && v.version == version
        };
        let found = versions.iter_mut().find(that).ok_or(StoreError::NotFound("version"))?;
        found.deactivated_at = found.deactivated_at.or(Some(event.at));
        self.events.lock().unwrap().push(event);
        Ok(found.clone())
    }

    async fn update_secret(&self, secret: &Secret, event: NewEvent) -> StoreResult<()> {
        let mut secrets = self.secrets.lock().unwrap();
        let stored = secrets.iter_mut().find(|s| s.id == secret.id).ok_or(StoreError::NotFound("secret"))?;
        *stored = secret.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }
}

#[async_trait]
impl CertificateStore for MemorySecrets {
    async fn add_member_certificate(&self, cert: &MemberCertificate, event: NewEvent) -> StoreResult<()> {
        self.certificates.lock().unwrap().push(cert.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn active_member_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<MemberCertificate>> {
        let certificates = self.certificates.lock().unwrap();
        Ok(certificates.iter().filter(|c| c.org_id == org && c.not_after > now).cloned().collect())
    }

    async fn add_agent_certificate(&self, cert: &AgentCertificate, event: NewEvent) -> StoreResult<()> {
        self.agent_certificates.lock().unwrap().push(cert.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn active_agent_certificates(
        &self,
        org: OrgId,
        now: OffsetDateTime,
    ) -> StoreResult<Vec<AgentCertificate>> {
        let revoked = self.revoked.lock().unwrap().clone();
        let certificates = self.agent_certificates.lock().unwrap();
        let active =
            |c: &&AgentCertificate| c.org_id == org && c.not_after > now && !revoked.contains(&c.sha256);
        Ok(certificates.iter().filter(active).cloned().collect())
    }

    async fn list_certificates(
        &self,
        org: OrgId,
        member: Option<MemberId>,
    ) -> StoreResult<Vec<IssuedCertificateInfo>> {
        let revoked = self.revoked.lock().unwrap().clone();
        let issued =
            |sha256: &Sha256Hex, kind, subject: String, (created_at, not_after)| IssuedCertificateInfo {
                sha256: sha256.clone(),
                kind,
                subject_id: subject.clone(),
                subject,
                created_at,
                not_after,
                revoked_at: revoked.contains(sha256).then_some(OffsetDateTime::UNIX_EPOCH),
            };
        let mut all = Vec::new();
        for c in self.certificates.lock().unwrap().iter().filter(|c| c.org_id == org) {
            all.push(issued(
                &c.sha256,
                CertificateKind::Member,
                c.member_id.to_string(),
                (c.created_at, c.not_after),
            ));
        }
        for c in self.agent_certificates.lock().unwrap().iter().filter(|c| c.org_id == org) {
            let times = (c.created_at, c.not_after);
            all.push(issued(&c.sha256, CertificateKind::AgentServer, c.agent_id.to_string(), times));
        }
        let mine = |c: &IssuedCertificateInfo| {
            member.is_none_or(|m| c.kind == CertificateKind::Member && c.subject_id == m.to_string())
        };
        Ok(all.into_iter().filter(mine).collect())
    }

    async fn revoke_certificate(
        &self,
        org: OrgId,
        sha256: &Sha256Hex,
        event: NewEvent,
    ) -> StoreResult<IssuedCertificateInfo> {
        let all = self.list_certificates(org, None).await?;
        let found =
            all.into_iter().find(|c| &c.sha256 == sha256).ok_or(StoreError::NotFound("certificate"))?;
        let mut revoked = self.revoked.lock().unwrap();
        if !revoked.contains(sha256) {
            revoked.push(sha256.clone());
        }
        self.events.lock().unwrap().push(event);
        Ok(IssuedCertificateInfo {
            revoked_at: found.revoked_at.or(Some(OffsetDateTime::UNIX_EPOCH)),
            ..found
        })
    }
}
