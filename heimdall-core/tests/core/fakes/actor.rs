use super::*;

/// Ana, in organization `ORG`, whose policies refuse `refused` (on any
/// target naming `refused_under` among its ancestors, or on any target
/// when that is `None`); what she was asked is kept.
pub struct Ana {
    member: MemberId,
    role: Role,
    refused: Option<(Action, Option<String>)>,
    refused_in: Option<(Action, String)>,
    pub asked: Mutex<Vec<(Action, Target)>>,
}

pub const ORG: OrgId = OrgId::from_uuid(Uuid::nil());

/// A catalog entry `n` of `ORG`, made by Ana.
pub fn entry(n: u128, kind: CatalogKind, name: &str, parent: Option<CatalogId>) -> CatalogEntry {
    CatalogEntry {
        id: CatalogId::from_uuid(Uuid::from_u128(n)),
        org_id: ORG,
        kind,
        name: name.into(),
        description: String::new(),
        parent_id: parent,
        created_at: OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
    }
}
/// Ana's member id.
pub const ANA: MemberId = MemberId::from_uuid(Uuid::from_u128(1));

impl Ana {
    pub fn allowed_everything() -> Self {
        Self { member: ANA, role: Role::Owner, refused: None, refused_in: None, asked: Mutex::default() }
    }

    /// Ana, whose policies refuse `action` in `environment` only.
    pub fn refused_in(action: Action, environment: &str) -> Self {
        Self { refused_in: Some((action, environment.to_owned())), ..Self::allowed_everything() }
    }

    /// Another member than Ana, as `member`, with her policies' answers.
    pub fn with_member(self, member: MemberId) -> Self {
        Self { member, ..self }
    }

    /// Ana with another role than owner.
    pub fn with_role(self, role: Role) -> Self {
        Self { role, ..self }
    }

    pub fn refused(action: Action, under: Option<CatalogId>) -> Self {
        let refused = Some((action, under.map(|id| id.to_string())));
        Self { refused, ..Self::allowed_everything() }
    }

    pub fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

#[async_trait]
impl Actor for Ana {
    fn org(&self) -> OrgId {
        ORG
    }

    fn name(&self) -> &str {
        "ana@example.com"
    }

    fn member(&self) -> MemberId {
        self.member
    }

    fn role(&self) -> Role {
        self.role
    }

    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH
    }

    async fn authorize(&self, action: Action, target: &Target) -> Result<(), ApiError> {
        self.asked.lock().unwrap().push((action, target.clone()));
        let names = |id: &String| target.id == *id || target.chains.iter().flatten().any(|(_, a)| a == id);
        match &self.refused {
            Some((refused, under)) if *refused == action && under.as_ref().is_none_or(names) => {
                Err(ApiError::forbidden("refused by the test's policy"))
            }
            _ => Ok(()),
        }
    }

    async fn authorize_in(&self, action: Action, target: &Target, environment: &str) -> Result<(), ApiError> {
        if self.refused_in.as_ref().is_some_and(|(a, env)| *a == action && env == environment) {
            self.asked.lock().unwrap().push((action, target.clone()));
            return Err(ApiError::forbidden("refused in this environment by the test's policy"));
        }
        self.authorize(action, target).await
    }

    async fn allows_each(
        &self,
        action: Action,
        items: &[(Target, Option<&str>)],
    ) -> Result<Vec<bool>, ApiError> {
        let mut allowed = Vec::with_capacity(items.len());
        for (target, environment) in items {
            let decided = match environment {
                Some(env) => self.authorize_in(action, target, env).await,
                None => self.authorize(action, target).await,
            };
            allowed.push(decided.is_ok());
        }
        Ok(allowed)
    }

    fn event(&self, plan: EventPlan) -> NewEvent {
        NewEvent {
            id: EventId::from_uuid(Uuid::new_v4()),
            at: self.now(),
            actor: self.name().to_owned(),
            action: plan.action,
            target: plan.target,
            detail: plan.detail,
        }
    }

    /// As the API decides it: an organization secret that Ana may read
    /// where it is, in that environment.
    async fn may_use(
        &self,
        secret: UsedSecret<'_>,
        environment: &str,
        tree: &CatalogTree,
    ) -> Result<(), ApiError> {
        heimdall_core::secrets::usable_by_jobs(secret.owner)?;
        let target = secret_target(secret.id, secret.owner, secret.components, tree);
        self.authorize_in(Action::SecretRead, &target, environment).await
    }
}
