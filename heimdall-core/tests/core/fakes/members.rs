use super::*;

/// The members port in memory, with the SQL store's refusals: one member
/// per address, and `LAST_OWNER` (core's rule, on the owners counted
/// here) for a change that would leave no owner. Tokens are counted per
/// member; a removal revokes them.
#[derive(Default)]
pub struct MemoryMembers {
    members: Mutex<Vec<Member>>,
    tokens: Mutex<Vec<(MemberId, String)>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryMembers {
    pub fn with(members: &[Member]) -> Self {
        Self { members: Mutex::new(members.to_vec()), ..Self::default() }
    }

    pub fn members(&self) -> Vec<Member> {
        self.members.lock().unwrap().clone()
    }

    pub fn tokens_of(&self, member: MemberId) -> Vec<String> {
        let tokens = self.tokens.lock().unwrap();
        tokens.iter().filter(|(m, _)| *m == member).map(|(_, name)| name.clone()).collect()
    }

    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }

    fn owners(&self) -> u64 {
        self.members.lock().unwrap().iter().filter(|m| m.role == Role::Owner).count() as u64
    }
}

#[async_trait]
impl MemberStore for MemoryMembers {
    async fn add_member(&self, member: &Member, token: &NewToken, event: NewEvent) -> StoreResult<()> {
        let mut members = self.members.lock().unwrap();
        if members.iter().any(|m| m.org_id == member.org_id && m.email == member.email) {
            return Err(StoreError::AlreadyExists("member"));
        }
        members.push(member.clone());
        self.tokens.lock().unwrap().push((member.id, token.name.clone()));
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_members(&self, org: OrgId) -> StoreResult<Vec<Member>> {
        let mut members: Vec<Member> =
            self.members.lock().unwrap().iter().filter(|m| m.org_id == org).cloned().collect();
        members.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(members)
    }

    async fn get_member(&self, org: OrgId, id: MemberId) -> StoreResult<Member> {
        let members = self.members.lock().unwrap();
        members.iter().find(|m| m.org_id == org && m.id == id).cloned().ok_or(StoreError::NotFound("member"))
    }

    async fn find_member_by_email(&self, org: OrgId, email: &str) -> StoreResult<Option<Member>> {
        Ok(self.members.lock().unwrap().iter().find(|m| m.org_id == org && m.email == email).cloned())
    }

    async fn change_role(
        &self,
        org: OrgId,
        id: MemberId,
        role: Role,
        event: NewEvent,
    ) -> StoreResult<Member> {
        let owners = self.owners();
        let mut members = self.members.lock().unwrap();
        let member = members
            .iter_mut()
            .find(|m| m.org_id == org && m.id == id)
            .ok_or(StoreError::NotFound("member"))?;
        heimdall_core::members::check_owner_remains(owners, member.role, Some(role))
            .map_err(StoreError::Refused)?;
        member.role = role;
        self.events.lock().unwrap().push(event);
        Ok(member.clone())
    }

    async fn remove_member(&self, org: OrgId, id: MemberId, event: NewEvent) -> StoreResult<Member> {
        let owners = self.owners();
        let mut members = self.members.lock().unwrap();
        let at = members
            .iter()
            .position(|m| m.org_id == org && m.id == id)
            .ok_or(StoreError::NotFound("member"))?;
        heimdall_core::members::check_owner_remains(owners, members[at].role, None)
            .map_err(StoreError::Refused)?;
        self.tokens.lock().unwrap().retain(|(m, _)| *m != id);
        self.events.lock().unwrap().push(event);
        Ok(members.remove(at))
    }
}
