use super::*;

/// Console sign-in links and Agents' registrations in memory, with the
/// SQL store's rules: a code or a registration token is used once, before
/// it expires; what it makes (a session token, an enrolled Agent) is kept
/// with the event, and nothing when it is refused.
#[derive(Default)]
pub struct MemorySignIns {
    /// (code hash, member, expires at, used).
    links: Mutex<Vec<(TokenHash, Member, OffsetDateTime, bool)>>,
    registrations: Mutex<Vec<Registration>>,
    pub sessions: Mutex<Vec<NewToken>>,
    pub agents: Mutex<Vec<Agent>>,
    events: Mutex<Vec<NewEvent>>,
}

/// An Agent's registration: its token's hash, where it enrolls, until
/// when, and whether it was used.
struct Registration {
    hash: TokenHash,
    org: OrgId,
    name: String,
    expires_at: OffsetDateTime,
    used: bool,
}

impl MemorySignIns {
    /// A registration for an Agent `name`, usable until `expires_at`.
    pub fn register(&self, token: &str, name: &str, expires_at: OffsetDateTime) {
        let registration = Registration {
            hash: TokenHash::of(token),
            org: ORG,
            name: name.to_owned(),
            expires_at,
            used: false,
        };
        self.registrations.lock().unwrap().push(registration);
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl SignInStore for MemorySignIns {
    async fn create_sign_in(
        &self,
        org: OrgId,
        member: MemberId,
        code: &TokenHash,
        expires_at: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<()> {
        let member = Member {
            id: member,
            org_id: org,
            email: "ana@example.com".into(),
            role: Role::Owner,
            created_at: OffsetDateTime::UNIX_EPOCH,
        };
        self.links.lock().unwrap().push((code.clone(), member, expires_at, false));
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn redeem_sign_in(
        &self,
        code: &TokenHash,
        now: OffsetDateTime,
        token: &NewToken,
    ) -> StoreResult<Option<(Member, Organization)>> {
        let mut links = self.links.lock().unwrap();
        let usable = |(hash, _, expires_at, used): &&mut (TokenHash, Member, OffsetDateTime, bool)| {
            hash == code && *expires_at > now && !*used
        };
        let Some(link) = links.iter_mut().find(usable) else { return Ok(None) };
        link.3 = true;
        self.sessions.lock().unwrap().push(token.clone());
        let org =
            Organization { id: link.1.org_id, name: "acme".into(), created_at: OffsetDateTime::UNIX_EPOCH };
        Ok(Some((link.1.clone(), org)))
    }
}

#[async_trait]
impl EnrollmentStore for MemorySignIns {
    async fn enroll_agent(
        &self,
        hash: &TokenHash,
        agent: &Agent,
        now: OffsetDateTime,
        event: NewEvent,
    ) -> StoreResult<Agent> {
        let mut registrations = self.registrations.lock().unwrap();
        let usable = |r: &&mut Registration| &r.hash == hash && r.expires_at > now && !r.used;
        let registration =
            registrations.iter_mut().find(usable).ok_or(StoreError::NotFound("registration"))?;
        registration.used = true;
        let enrolled = Agent { org_id: registration.org, name: registration.name.clone(), ..agent.clone() };
        self.agents.lock().unwrap().push(enrolled.clone());
        self.events.lock().unwrap().push(event);
        Ok(enrolled)
    }
}

/// The adapter's clock and event stamps for flows with no member behind
/// them, at a time a test sets.
pub struct Clerk(pub OffsetDateTime);

impl Recorder for Clerk {
    fn now(&self) -> OffsetDateTime {
        self.0
    }

    fn event(&self, actor: &str, plan: EventPlan) -> NewEvent {
        NewEvent {
            id: EventId::from_uuid(Uuid::new_v4()),
            at: self.0,
            actor: actor.to_owned(),
            action: plan.action,
            target: plan.target,
            detail: plan.detail,
        }
    }
}
