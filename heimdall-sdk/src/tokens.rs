//! API tokens: the caller's own.

use heimdall_core::ids::TokenId;
use reqwest::Method;

use crate::wire::{ConsoleSignInLink, CreateToken, CreatedToken, TokenInfo};
use crate::{Client, Result};

impl Client {
    /// `GET /v1/tokens`: the caller's own tokens (metadata only).
    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
        self.get_all_pages(&["tokens"], &[]).await
    }

    /// `POST /v1/tokens`: a new token for the caller, shown this once.
    pub async fn create_token(&self, name: &str) -> Result<CreatedToken> {
        self.with_body(Method::POST, &["tokens"], &CreateToken { name: name.to_owned() }).await
    }

    /// `POST /v1/console/sign-in-links`: a link (a path under the API's
    /// URL) that signs the web Console in as this client's member, once,
    /// within a minute, for a session of 12 hours. The code is in the
    /// URL's fragment: browsers never send it to a server.
    pub async fn create_console_sign_in_link(&self) -> Result<ConsoleSignInLink> {
        let url = self.url(&["console", "sign-in-links"])?;
        self.send(self.authed(Method::POST, url)).await
    }

    /// `DELETE /v1/tokens/{id}`.
    pub async fn revoke_token(&self, id: TokenId) -> Result<TokenInfo> {
        self.delete(&["tokens", &id.to_string()]).await
    }
}
