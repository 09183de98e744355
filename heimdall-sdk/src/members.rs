//! Members of the organization and their roles.

use reqwest::Method;

use crate::wire::{AddMember, AddedMember, ChangeRole, Member, Role};
use crate::{Client, Result};

impl Client {
    /// `GET /v1/members`, every page.
    pub async fn list_members(&self) -> Result<Vec<Member>> {
        self.get_all_pages(&["members"], &[]).await
    }

    /// `POST /v1/members`: adds a member and returns their first API token,
    /// which the server shows this once.
    ///
    /// ```no_run
    /// # async fn demo(client: heimdall_sdk::Client) -> Result<(), heimdall_sdk::Error> {
    /// use heimdall_sdk::wire::Role;
    /// let added = client.add_member("ana@example.com", Role::Admin).await?;
    /// println!("{} can now log in with the token shown once", added.member.email);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn add_member(&self, email: &str, role: Role) -> Result<AddedMember> {
        self.with_body(Method::POST, &["members"], &AddMember { email: email.to_owned(), role }).await
    }

    /// `GET /v1/members/{id-or-email}`.
    pub async fn get_member(&self, id_or_email: &str) -> Result<Member> {
        self.get(&["members", id_or_email]).await
    }

    /// `PATCH /v1/members/{id-or-email}`: changes a member's role. The last
    /// owner cannot be demoted (`LAST_OWNER`).
    pub async fn change_role(&self, id_or_email: &str, role: Role) -> Result<Member> {
        self.with_body(Method::PATCH, &["members", id_or_email], &ChangeRole { role }).await
    }

    /// `DELETE /v1/members/{id-or-email}`: removes a member and revokes their tokens.
    pub async fn remove_member(&self, id_or_email: &str) -> Result<Member> {
        self.delete(&["members", id_or_email]).await
    }
}
