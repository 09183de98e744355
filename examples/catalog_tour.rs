//! A small SDK program: make sure a domain → system → component path
//! exists, then print the catalog as a tree.
//!
//! ```sh
//! export HEIMDALL_API_URL=http://127.0.0.1:7480 HEIMDALL_TOKEN=hmd_…
//! cargo run -p heimdall-examples --example catalog_tour -- payments checkout api
//! ```

use heimdall_sdk::wire::{CatalogEntry, CatalogKind, CreateCatalogEntry};
use heimdall_sdk::{Client, ErrorCode};

/// Returns the entry named `name` of `kind` under `parent`, creating it if
/// it does not exist yet.
async fn ensure(
    client: &Client,
    kind: CatalogKind,
    name: &str,
    parent: Option<&CatalogEntry>,
) -> Result<CatalogEntry, heimdall_sdk::Error> {
    let existing = client.list_catalog(kind, parent.map(|p| p.name.as_str())).await?;
    if let Some(entry) = existing.into_iter().find(|e| e.name == name) {
        return Ok(entry);
    }
    let request =
        CreateCatalogEntry { name: name.to_owned(), parent_id: parent.map(|p| p.id), ..Default::default() };
    match client.create_catalog_entry(kind, &request).await {
        // Someone created it between our list and our create: fine.
        Err(err) if err.code() == Some(ErrorCode::AlreadyExists) => client
            .list_catalog(kind, parent.map(|p| p.name.as_str()))
            .await?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or(err),
        other => other,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("HEIMDALL_API_URL").unwrap_or_else(|_| "http://127.0.0.1:7480".into());
    let token =
        std::env::var("HEIMDALL_TOKEN").map_err(|_| "set HEIMDALL_TOKEN (see `heimdall token create`)")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [domain, system, component] = args.as_slice() else {
        return Err("usage: catalog_tour DOMAIN SYSTEM COMPONENT".into());
    };

    let client = Client::new(&url, token)?;
    let me = client.whoami().await?;
    println!("{} ({}) in {}", me.member.email, me.member.role, me.organization.name);

    let d = ensure(&client, CatalogKind::Domain, domain, None).await?;
    let s = ensure(&client, CatalogKind::System, system, Some(&d)).await?;
    ensure(&client, CatalogKind::Component, component, Some(&s)).await?;

    for d in client.list_catalog(CatalogKind::Domain, None).await? {
        println!("{}", d.name);
        for s in client.list_catalog(CatalogKind::System, Some(&d.id.to_string())).await? {
            println!("  {}", s.name);
            for c in client.list_catalog(CatalogKind::Component, Some(&s.id.to_string())).await? {
                println!("    {}", c.name);
            }
        }
    }
    Ok(())
}
