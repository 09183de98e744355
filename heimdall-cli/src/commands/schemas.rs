//! `schema create|list|show|deprecate|undeprecate|delete`.

use std::collections::BTreeMap;

use heimdall_wire::{CreateSchema, ModuleRef, ResourceSchema};

use super::{read_json_file, stdin_once, Context};
use crate::args::SchemaCommand;
use crate::error::{CliError, Result};
use crate::output::timestamp;

pub async fn run(ctx: &Context, cmd: SchemaCommand) -> Result<()> {
    let out = &ctx.out;
    match cmd {
        SchemaCommand::Create {
            type_name,
            input_schema,
            defaults,
            module_source,
            module_version,
            requires_approval,
            drift_check_every,
        } => {
            if let Some(every) = &drift_check_every {
                heimdall_core::drift::parse_every(every).map_err(|e| CliError::usage(e.message))?;
            }
            // Files first: a typo in a path should not cost a round trip.
            stdin_once(&[("--input-schema", Some(&input_schema)), ("--defaults", defaults.as_deref())])?;
            let input_schema_json = read_json_file("--input-schema", &input_schema)?;
            if !input_schema_json.is_object() {
                return Err(CliError::usage(format!(
                    "--input-schema: {} must hold a JSON object (a JSON Schema)",
                    input_schema.display()
                )));
            }
            let defaults = defaults.map(|path| read_defaults(&path)).transpose()?;
            // clap makes the two module flags go together.
            let module = match (module_source, module_version) {
                (Some(source), Some(version)) => Some(ModuleRef { source, version }),
                _ => None,
            };
            let request = CreateSchema {
                type_name,
                input_schema: input_schema_json,
                defaults,
                module,
                requires_approval,
                drift_check_every,
            };
            let schema = ctx.client()?.create_schema(&request).await?;
            out.done(
                &schema,
                &format!("Schema created: {} version {} ({})", schema.type_name, schema.version, schema.id),
                &[],
            )
        }
        SchemaCommand::List { type_name } => {
            let schemas = ctx.client()?.list_schemas(type_name.as_deref()).await?;
            out.list(
                &schemas,
                &["ID", "TYPE", "VERSION", "STATUS", "APPROVAL", "MODULE", "CREATED BY", "CREATED AT"],
                |s: &ResourceSchema| {
                    vec![
                        s.id.to_string(),
                        s.type_name.clone(),
                        s.version.to_string(),
                        status(s).to_owned(),
                        approval(s).to_owned(),
                        module_label(s),
                        s.created_by.clone(),
                        timestamp(s.created_at),
                    ]
                },
            )
        }
        SchemaCommand::Show { schema } => {
            let client = ctx.client()?;
            let s = client.get_schema(&schema).await?;
            let environments: Vec<&str> = s.defaults.keys().map(String::as_str).collect();
            let older = if out.is_json() { String::new() } else { on_older_versions(&client, &s).await };
            out.record(
                &s,
                &[
                    ("ID", s.id.to_string()),
                    ("TYPE", s.type_name.clone()),
                    ("VERSION", s.version.to_string()),
                    ("STATUS", status(&s).to_owned()),
                    ("APPROVAL", approval(&s).to_owned()),
                    ("MODULE", module_label(&s)),
                    ("DEFAULTS FOR", environments.join(", ")),
                    ("ON OLDER VERSIONS", older),
                    ("CREATED BY", s.created_by.clone()),
                    ("CREATED AT", timestamp(s.created_at)),
                ],
            )?;
            let mut text = format!("\nInput schema:\n{}\n", pretty(&s.input_schema));
            for (environment, defaults) in &s.defaults {
                text.push_str(&format!("\nDefaults for {environment}:\n{}\n", pretty(defaults)));
            }
            out.text(&text)
        }
        SchemaCommand::Deprecate { schema, version } => {
            let client = ctx.client()?;
            let s = one_version(&client, &schema, version).await?;
            let s = client.set_schema_deprecated(&s.id.to_string(), true).await?;
            out.done(&s, &format!("Schema deprecated: {} version {}", s.type_name, s.version), &[])
        }
        SchemaCommand::Undeprecate { schema, version } => {
            let client = ctx.client()?;
            let s = one_version(&client, &schema, version).await?;
            let s = client.set_schema_deprecated(&s.id.to_string(), false).await?;
            out.done(&s, &format!("Schema no longer deprecated: {} version {}", s.type_name, s.version), &[])
        }
        SchemaCommand::Delete { schema, version } => {
            let client = ctx.client()?;
            let s = one_version(&client, &schema, version).await?;
            client.delete_schema(&s.id.to_string()).await?;
            out.done(&s, &format!("Schema deleted: {} version {}", s.type_name, s.version), &[])
        }
    }
}

/// One version: by id, or a type and `--version` (a type alone would
/// pick a version for the caller).
async fn one_version(
    client: &heimdall_sdk::Client,
    schema: &str,
    version: Option<i64>,
) -> Result<ResourceSchema> {
    match version {
        Some(version) => Ok(client.schema_version(schema, version).await?),
        None if schema.parse::<heimdall_core::ids::SchemaId>().is_ok() => {
            Ok(client.get_schema(schema).await?)
        }
        None => Err(CliError::usage(format!("{schema} is a type: name its version with --version N"))),
    }
}

fn status(s: &ResourceSchema) -> &'static str {
    if s.deprecated_at.is_some() {
        "deprecated"
    } else {
        "active"
    }
}

/// `--defaults`: `{"<environment>": {…}}`.
fn read_defaults(path: &std::path::Path) -> Result<BTreeMap<String, serde_json::Value>> {
    let value = read_json_file("--defaults", path)?;
    match value {
        serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
        _ => Err(CliError::usage(format!(
            "--defaults: {} must hold a JSON object {{\"<environment>\": {{…}}}}",
            path.display()
        ))),
    }
}

fn approval(s: &ResourceSchema) -> &'static str {
    if s.requires_approval {
        "required"
    } else {
        "none"
    }
}

fn module_label(s: &ResourceSchema) -> String {
    s.module.as_ref().map(|m| format!("{}@{}", m.source, m.version)).unwrap_or_default()
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The Resources of this type on an older version than a new request
/// gets, for `schema show`: "none", or how many and which (at most 10
/// named; `resource list --type T --outdated` lists them all). Best
/// effort: a caller who may not list Resources sees "-".
async fn on_older_versions(client: &heimdall_sdk::Client, s: &ResourceSchema) -> String {
    const NAMED: usize = 10;
    let query = heimdall_sdk::ResourceQuery {
        schema_type: Some(s.type_name.clone()),
        outdated: true,
        ..Default::default()
    };
    let (Ok(resources), Ok(schemas)) =
        (client.list_resources(&query).await, client.list_schemas(Some(&s.type_name)).await)
    else {
        return "-".to_owned();
    };
    if resources.is_empty() {
        return "none".to_owned();
    }
    let mut named: Vec<String> = resources
        .iter()
        .take(NAMED)
        .map(|r| {
            let version = schemas.iter().find(|v| v.id == r.schema_id).map(|v| v.version);
            format!("{} (v{})", r.name, version.map_or_else(|| "?".to_owned(), |v| v.to_string()))
        })
        .collect();
    if resources.len() > NAMED {
        named.push(format!("and {} more", resources.len() - NAMED));
    }
    let count =
        if resources.len() == 1 { "1 Resource".to_owned() } else { format!("{} Resources", resources.len()) };
    format!("{count}: {}", named.join(", "))
}
