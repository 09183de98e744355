//! `secret create|list|show|update|access-log` and `environment assign-agent|agents`:
//! the Secret Manager's metadata. Nothing here takes or prints a secret's
//! value: the API never receives one (`secret set|get`, in `values`, talk
//! to Agents).

use std::collections::{BTreeMap, HashMap};

use heimdall_core::deletion::Lifecycle;
use heimdall_core::ids::CatalogId;
use heimdall_core::secrets::SecretStatus;
use heimdall_sdk::Client;
use heimdall_wire::{
    AccessLogEntry, Assignment, CatalogKind, CreateSecret, Secret, SecretVersion, UpdateSecret,
};

use super::Context;
use crate::args::SecretCommand;
use crate::error::{CliError, Result};
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: SecretCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        SecretCommand::Create { name, secret_type, description, tags, components, personal } => {
            // A personal secret is bound to this profile's client
            // certificate's key: only that key opens it at an Agent.
            let certificate_sha256 =
                if personal { Some(ctx.identity()?.certificate_sha256()?) } else { None };
            let request = CreateSecret {
                name,
                secret_type,
                description,
                tags: if tags.is_empty() { None } else { Some(parse_tags(&tags)?) },
                components: if components.is_empty() { None } else { Some(components) },
                personal,
                certificate_sha256,
            };
            let secret = ctx.client()?.create_secret(&request).await?;
            out.done(&secret, &format!("Secret created: {} ({})", shown(&secret.name), secret.id), &[])
        }
        SecretCommand::List { at_risk, page } => {
            let client = ctx.client()?;
            let mut secrets = if page.one_page() {
                let (secrets, next) = client.list_secrets_page(page.limit, page.after.as_deref()).await?;
                super::say_next_page(next.as_deref());
                secrets
            } else {
                client.list_secrets().await?
            };
            secrets.retain(|s| !at_risk || !s.at_risk.is_empty());
            let components =
                if out.is_json() { HashMap::new() } else { names(&client, CatalogKind::Component).await };
            let headers = ["NAME", "TYPE", "STATUS", "AT RISK", "TAGS", "COMPONENTS", "UPDATED AT"];
            out.list(&secrets, &headers, |s: &Secret| {
                vec![
                    shown(&s.name).to_owned(),
                    s.secret_type.clone(),
                    s.status.as_str().to_owned(),
                    at_risk_label(s),
                    tags_label(&s.tags),
                    components_label(&components, &s.components),
                    timestamp(s.updated_at),
                ]
            })
        }
        SecretCommand::Show { secret } => {
            let client = ctx.client()?;
            let detail = client.get_secret(&secret).await?;
            let (components, environments) = if out.is_json() {
                (HashMap::new(), HashMap::new())
            } else {
                (names(&client, CatalogKind::Component).await, names(&client, CatalogKind::Environment).await)
            };
            let s = &detail.secret;
            out.record(
                &detail,
                &[
                    ("ID", s.id.to_string()),
                    ("NAME", shown(&s.name).to_owned()),
                    ("TYPE", s.secret_type.clone()),
                    ("STATUS", s.status.as_str().to_owned()),
                    ("DESCRIPTION", s.description.clone()),
                    ("TAGS", tags_label(&s.tags)),
                    ("COMPONENTS", components_label(&components, &s.components)),
                    ("PERSONAL", personal_label(s.personal_owner.as_deref())),
                    ("CREATED BY", s.created_by.clone()),
                    ("CREATED AT", timestamp(s.created_at)),
                    ("UPDATED AT", timestamp(s.updated_at)),
                ],
            )?;
            if !s.at_risk.is_empty() {
                let rows = s.at_risk.iter().map(|m| {
                    let versions: Vec<String> = m.versions.iter().map(i64::to_string).collect();
                    vec![m.environment.clone(), m.email.clone(), versions.join(", "), timestamp(m.marked_at)]
                });
                out.text("\nAt risk (read by a member since removed; a new version there clears it):")?;
                out.section(
                    &["ENVIRONMENT", "REMOVED MEMBER", "VERSIONS READ", "MARKED AT"],
                    rows.collect(),
                )?;
            }
            for d in &detail.environment_deletions {
                let when = d.deleted_at.map_or_else(|| "in progress".to_owned(), timestamp);
                out.text(&format!("\n{} in {} ({when})\n", d.status, d.environment))?;
            }
            if !detail.holdings.is_empty() {
                out.text("\nHeld by (each Agent's last inventory):")?;
                let rows = detail.holdings.iter().map(|h| super::agents::holding_row(&h.agent, h));
                out.section(&super::agents::HOLDING_COLUMNS, rows.collect())?;
            }
            if !detail.behind.is_empty() {
                out.text("\nBehind (each fetches the current version from another holder):")?;
                let rows = detail.behind.iter().map(|b| super::agents::behind_row(&b.agent, b));
                out.section(&super::agents::BEHIND_COLUMNS, rows.collect())?;
            }
            if detail.versions.is_empty() {
                return out.text("\nno versions yet\n");
            }
            let now = time::OffsetDateTime::now_utc();
            let rows = detail.versions.iter().map(|v| version_row(&environments, v, now)).collect();
            out.section(&["ENVIRONMENT", "VERSION", "CREATED BY", "CREATED AT", "STATUS"], rows)
        }
        SecretCommand::Update { secret, secret_type, description, tags, clear_tags, components } => {
            let tags = match (clear_tags, tags.is_empty()) {
                (true, _) => Some(BTreeMap::new()),
                (false, true) => None,
                (false, false) => Some(parse_tags(&tags)?),
            };
            let change = UpdateSecret {
                secret_type,
                description,
                tags,
                components: if components.is_empty() { None } else { Some(components) },
            };
            if change == UpdateSecret::default() {
                return Err(CliError::usage(
                    "nothing to change: give --type, --description, --tag, --clear-tags or --component",
                ));
            }
            let updated = ctx.client()?.update_secret(&secret, &change).await?;
            out.done(&updated, &format!("Secret updated: {} ({})", updated.name, updated.id), &[])
        }
        SecretCommand::Set { secret, environment, from_file, agent_url, keep_previous } => {
            let write = super::values::NewValue {
                secret: &secret,
                environment: &environment,
                from_file: from_file.as_deref(),
                agent_url: agent_url.as_deref(),
                keep_previous: keep_previous.as_deref(),
            };
            super::values::set(ctx, write).await
        }
        SecretCommand::Get { secret, environment, version, agent_url } => {
            super::values::get(ctx, &secret, &environment, version, agent_url.as_deref()).await
        }
        SecretCommand::Delete { secret, environment, wait } => {
            let client = ctx.client()?;
            let mut detail = client.delete_secret(&secret, environment.as_deref()).await?;
            let id = detail.secret.id.to_string();
            let pending = |d: &heimdall_wire::SecretDetail| match environment.as_deref() {
                None => d.secret.status == SecretStatus::Deleting,
                Some(env) => d.environment_deletions.iter().any(|x| {
                    x.status == Lifecycle::Deleting
                        && (x.environment == env || x.environment_id.to_string() == env)
                }),
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
            while wait && pending(&detail) {
                if std::time::Instant::now() > deadline {
                    return Err(CliError::local(format!(
                        "{secret} is still being deleted after 10 minutes: an Agent has not synced (see `heimdall secret show {secret}`)"
                    )));
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                detail = client.get_secret(&id).await?;
            }
            let (name, place) = (
                shown(&detail.secret.name),
                environment.as_deref().map_or(String::new(), |e| format!(" in {e}")),
            );
            let line = if pending(&detail) {
                format!(
                    "Secret {name} is being deleted{place}: every Agent that may hold a copy deletes it at its next \
                     sync, and it is deleted once each has reported holding none (`--wait` waits for that)"
                )
            } else {
                format!("Secret deleted{place}: {name} (no Agent holds a copy)")
            };
            let mut agents: Vec<String> = detail.holdings.iter().map(|h| h.agent.clone()).collect();
            agents.dedup();
            let extra: Vec<String> = if agents.is_empty() || !pending(&detail) {
                Vec::new()
            } else {
                vec![format!("Held by: {}", agents.join(", "))]
            };
            out.done(&detail, &line, &extra)
        }
        SecretCommand::Deactivate { secret, environment, version } => {
            super::values::deactivate(ctx, &secret, &environment, version).await
        }
        SecretCommand::AccessLog { secret, environment, limit, after, all } => {
            let client = ctx.client()?;
            let (mut entries, mut next) =
                client.access_log_page(&secret, environment.as_deref(), limit, after.as_deref()).await?;
            while let (true, Some(cursor)) = (all, next.take()) {
                let (more, after) =
                    client.access_log_page(&secret, environment.as_deref(), limit, Some(&cursor)).await?;
                entries.extend(more);
                next = after;
            }
            if let Some(cursor) = &next {
                eprintln!("More entries: add --after {cursor} (or --all)");
            }
            // Reads reach the API when the Agent that served them syncs: a
            // read a moment ago is not here yet, and an empty log says so.
            if entries.is_empty() && after.is_none() && !out.is_json() {
                eprintln!(
                    "note: no reads recorded here yet. An Agent records each read before serving it and \
                     reports it on its next sync (every 2 s under `heimdall dev`); run this again in a moment"
                );
            }
            out.list(
                &entries,
                &["ACCESSED_AT", "ACCESSOR", "ENVIRONMENT", "VERSION", "SERVED_BY", "FROM", "READS"],
                |e: &AccessLogEntry| {
                    vec![
                        timestamp(e.accessed_at),
                        e.accessor.clone(),
                        e.environment.clone(),
                        e.version.to_string(),
                        e.served_by.clone(),
                        e.from.clone(),
                        e.reads.to_string(),
                    ]
                },
            )
        }
    }
}

/// `environment assign-agent ENV AGENT` (owner).
pub async fn assign_agent(ctx: &Context, environment: &str, agent: &str) -> Result<()> {
    let assignment = ctx.client()?.assign_agent(environment, agent).await?;
    ctx.out.done(
        &assignment,
        &format!(
            "Agent assigned: {agent} ({}) holds the secret values of {environment}",
            assignment.agent_id
        ),
        &[],
    )
}

pub async fn unassign_agent(ctx: &Context, environment: &str, agent: &str) -> Result<()> {
    let assignment = ctx.client()?.unassign_agent(environment, agent).await?;
    let line = format!(
        "Agent unassigned: {agent} no longer holds {environment}; it deletes its values there on its next sync"
    );
    ctx.out.done(&assignment, &line, &[])
}

/// `environment agents ENV`.
pub async fn list_assignments(ctx: &Context, environment: &str) -> Result<()> {
    let assignments = ctx.client()?.list_assignments(environment).await?;
    ctx.out.list(&assignments, &["AGENT ID", "ASSIGNED BY", "ASSIGNED AT"], |a: &Assignment| {
        vec![a.agent_id.to_string(), a.assigned_by.clone(), timestamp(a.assigned_at)]
    })
}

/// `--tag KEY=VALUE`s as a map. A tag without `=`, with an empty key, or a
/// key given twice is a usage error. The error may name a key, never what
/// follows its `=`; and a tag without `=` is not shown at all (the whole of
/// it may be something private typed in the wrong place).
pub fn parse_tags(tags: &[String]) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for (i, tag) in tags.iter().enumerate() {
        let position = i + 1;
        let Some((key, value)) = tag.split_once('=') else {
            return Err(CliError::usage(format!(
                "--tag takes KEY=VALUE, and --tag #{position} has no `=` (not shown here)"
            )));
        };
        if key.trim().is_empty() {
            return Err(CliError::usage(format!(
                "--tag takes KEY=VALUE, and --tag #{position} has no key before its `=`"
            )));
        }
        if map.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(CliError::usage(format!("--tag {key} is given twice")));
        }
    }
    Ok(map)
}

/// `k=v,k=v`, by key.
fn tags_label(tags: &BTreeMap<String, String>) -> String {
    tags.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `api,worker`: names (ids when unknown), sorted (the API keeps no order).
fn components_label(names: &HashMap<CatalogId, String>, components: &[CatalogId]) -> String {
    let mut labels: Vec<String> = components.iter().map(|id| name_or_id(names, *id)).collect();
    labels.sort();
    labels.join(",")
}

fn personal_label(owner: Option<&str>) -> String {
    match owner {
        Some(owner) => format!("yes, only {owner}"),
        None => "no".to_owned(),
    }
}

fn version_row(
    environments: &HashMap<CatalogId, String>,
    v: &SecretVersion,
    now: time::OffsetDateTime,
) -> Vec<String> {
    let status = match (v.deactivated_at, v.superseded_at) {
        (Some(_), _) => "deactivated".to_owned(),
        (None, Some(at)) if at <= now => "superseded".to_owned(),
        (None, Some(at)) => format!("kept until {}", timestamp(at)),
        (None, None) => "active".to_owned(),
    };
    vec![
        name_or_id(environments, v.environment_id),
        v.version.to_string(),
        v.created_by.clone(),
        timestamp(v.created_at),
        status,
    ]
}

fn name_or_id(names: &HashMap<CatalogId, String>, id: CatalogId) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

/// Names of catalog entries, for readable columns. Best effort: on any
/// error the columns show ids.
async fn names(client: &Client, kind: CatalogKind) -> HashMap<CatalogId, String> {
    client
        .list_catalog(kind, None)
        .await
        .map(|entries| entries.into_iter().map(|e| (e.id, e.name)).collect())
        .unwrap_or_default()
}

/// The environments where `secret` is at risk, or `-`.
fn at_risk_label(secret: &Secret) -> String {
    let mut environments: Vec<&str> = secret.at_risk.iter().map(|m| m.environment.as_str()).collect();
    environments.dedup();
    if environments.is_empty() {
        "-".to_owned()
    } else {
        environments.join(",")
    }
}

/// A secret's name as people gave it (a personal one's without its owner's part).
pub(crate) fn shown(name: &str) -> &str {
    heimdall_core::secrets::display_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn tags_are_key_equals_value() {
        let tags = parse_tags(&strings(&["team=payments", "tier=", "url=a=b"])).unwrap();
        assert_eq!(
            tags,
            BTreeMap::from([
                ("team".to_owned(), "payments".to_owned()),
                ("tier".to_owned(), String::new()),
                ("url".to_owned(), "a=b".to_owned()),
            ])
        );
        assert_eq!(tags_label(&tags), "team=payments,tier=,url=a=b");
        assert!(parse_tags(&[]).unwrap().is_empty());
    }

    #[test]
    fn bad_tags_are_usage_errors_that_do_not_echo_values() {
        for (tags, leaked) in [
            (&["team=payments", "hunter2-s3cr3t"][..], "hunter2"),
            (&["=hunter2-s3cr3t"][..], "hunter2"),
            (&["team=hunter2-a", "team=hunter2-b"][..], "hunter2"),
        ] {
            let err = parse_tags(&strings(tags)).unwrap_err();
            assert_eq!(err.exit_code(), exit::USAGE, "{tags:?}");
            assert!(!err.to_string().contains(leaked), "{tags:?}: {err}");
        }
        let err = parse_tags(&strings(&["a=1", "b"])).unwrap_err();
        assert!(err.to_string().contains("#2"), "{err}");
    }

    #[test]
    fn personal_and_status_labels() {
        assert_eq!(personal_label(None), "no");
        assert_eq!(personal_label(Some("ana@example.com")), "yes, only ana@example.com");

        let prod = CatalogId::from_uuid(uuid::Uuid::new_v4());
        let at = time::macros::datetime!(2025-01-31 12:00:00 UTC);
        let mut version = SecretVersion {
            secret_id: heimdall_core::ids::SecretId::from_uuid(uuid::Uuid::new_v4()),
            environment_id: prod,
            version: 3,
            created_at: at,
            created_by: "ana@example.com".into(),
            deactivated_at: None,
            keep_previous_seconds: 0,
            superseded_at: None,
        };
        let names = HashMap::from([(prod, "prod".to_owned())]);
        assert_eq!(
            version_row(&names, &version, at),
            ["prod", "3", "ana@example.com", "2025-01-31T12:00:00Z", "active"]
        );
        version.superseded_at = Some(at + time::Duration::hours(1));
        assert_eq!(version_row(&names, &version, at)[4], "kept until 2025-01-31T13:00:00Z");
        assert_eq!(version_row(&names, &version, at + time::Duration::hours(2))[4], "superseded");
        version.deactivated_at = Some(at);
        assert_eq!(version_row(&HashMap::new(), &version, at)[4], "deactivated");
        assert_eq!(version_row(&HashMap::new(), &version, at)[0], prod.to_string(), "unknown names show ids");
    }
}
