use super::*;

/// Members' tokens in memory: each member reaches only her own, and a
/// revocation keeps its first time.
#[derive(Default)]
pub struct MemoryTokens {
    tokens: Mutex<Vec<(OrgId, TokenInfo)>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryTokens {
    pub fn actions(&self) -> Vec<AuditAction> {
        self.events.lock().unwrap().iter().map(|e| e.action).collect()
    }
}

#[async_trait]
impl TokenStore for MemoryTokens {
    async fn create_token(
        &self,
        org: OrgId,
        member: MemberId,
        token: &NewToken,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let info = TokenInfo {
            id: token.id,
            member_id: member,
            name: token.name.clone(),
            created_at: event.at,
            revoked_at: None,
            expires_at: token.expires_at,
        };
        self.tokens.lock().unwrap().push((org, info.clone()));
        self.events.lock().unwrap().push(event);
        Ok(info)
    }

    async fn list_tokens(&self, org: OrgId, member: MemberId) -> StoreResult<Vec<TokenInfo>> {
        let tokens = self.tokens.lock().unwrap();
        Ok(tokens
            .iter()
            .filter(|(o, t)| *o == org && t.member_id == member)
            .map(|(_, t)| t.clone())
            .collect())
    }

    async fn revoke_token(
        &self,
        org: OrgId,
        member: MemberId,
        id: TokenId,
        event: NewEvent,
    ) -> StoreResult<TokenInfo> {
        let mut tokens = self.tokens.lock().unwrap();
        let hers = |(o, t): &&mut (OrgId, TokenInfo)| *o == org && t.member_id == member && t.id == id;
        let (_, token) = tokens.iter_mut().find(hers).ok_or(StoreError::NotFound("token"))?;
        token.revoked_at = token.revoked_at.or(Some(event.at));
        self.events.lock().unwrap().push(event);
        Ok(token.clone())
    }
}
