//! The root module a job runs: the account's state backend and the call
//! of the schema's module with the effective input. The Agent writes it
//! for every run and `heimdall terraform export` hands it out, so both
//! address the same state the same way (`module.resource.…`).

use crate::infra::{AccountAuth, JobRequest, ModuleRef, StateBackend};
use crate::runner::REGION_VARIABLE;

/// The root variables that carry secret inputs' values.
pub const SECRET_VAR_PREFIX: &str = "heimdall_secret_";

/// The module call's name: every Resource's objects are under
/// `module.resource` in its state.
pub const MODULE_NAME: &str = "resource";

/// A string literal in HCL. JSON string syntax is valid HCL for plain
/// strings; `${` and `%{` would be templates in HCL, so they are escaped.
pub fn hcl_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default().replace("${", "$${").replace("%{", "%%{")
}

/// Registry sources take `version`; local paths and URLs do not.
pub fn is_registry_source(source: &str) -> bool {
    !(source.starts_with("./")
        || source.starts_with("../")
        || source.starts_with('/')
        || source.contains("::")
        || source.contains("://")
        || source.starts_with("git@"))
}

/// What the Agent's operator changes about where state goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct StateSettings<'a> {
    /// Local disk instead of the account's store (the quickstart).
    pub local_dir: Option<&'a str>,
    /// Another S3 endpoint than the account's.
    pub s3_endpoint: Option<&'a str>,
    /// The job's credentials give the backend a key of its own (an Azure
    /// storage account key, through `init -backend-config`), so it does
    /// not sign in with the account's identity.
    pub keyed: bool,
}

/// The backend block: the account's state store with its own lock, one
/// state per Resource (`heimdall/<id>.tfstate`; for GCS the prefix
/// `heimdall/<id>`, which holds `default.tfstate`), or local disk.
pub fn backend_block(request: &JobRequest, settings: StateSettings<'_>) -> String {
    backend_at(request, settings, &request.state_key)
}

/// The root module that keeps a Resource's plan file awaiting approval
/// next to its state (`crate::plan::plan_key`): the same backend, with
/// the same credentials and the same native lock (S3's lock object, GCS's
/// conditional write, Azure's blob lease), at the plan's key. It declares
/// nothing else, so `init` installs no provider; the plan travels as that
/// state's one output (`crate::plan::holder_state`).
pub fn plan_holder(request: &JobRequest, settings: StateSettings<'_>) -> String {
    let key = crate::plan::plan_key(request.resource_id);
    format!("terraform {{\n{}}}\n", backend_at(request, settings, &key))
}

/// [`backend_block`] for the object `key` (`heimdall/<file>`); local state
/// is `<local_dir>/<file>`.
fn backend_at(request: &JobRequest, settings: StateSettings<'_>, key: &str) -> String {
    let account = &request.account;
    if let Some(local) = settings.local_dir {
        let file = key.rsplit('/').next().unwrap_or(key);
        let path = format!("{}/{file}", local.trim_end_matches('/'));
        return format!("  backend \"local\" {{\n    path = {}\n  }}\n", hcl_string(&path));
    }
    match account.state_backend {
        StateBackend::S3 => {
            let mut b = format!(
                "  backend \"s3\" {{\n    bucket       = {}\n    key          = {}\n    region       = {}\n    use_lockfile = true\n",
                hcl_string(&account.state_bucket),
                hcl_string(key),
                hcl_string(&account.region),
            );
            if let Some(endpoint) = settings.s3_endpoint.or(account.state_endpoint.as_deref()) {
                b.push_str(&format!(
                    "    endpoints = {{ s3 = {} }}\n    use_path_style = true\n    skip_credentials_validation = true\n    skip_requesting_account_id = true\n    skip_metadata_api_check = true\n    skip_region_validation = true\n",
                    hcl_string(endpoint)
                ));
            }
            b.push_str("  }\n");
            b
        }
        StateBackend::Gcs => {
            let prefix = key.strip_suffix(".tfstate").unwrap_or(key);
            let mut b = format!(
                "  backend \"gcs\" {{\n    bucket = {}\n    prefix = {}\n",
                hcl_string(&account.state_bucket),
                hcl_string(prefix)
            );
            if let Some(endpoint) = &account.state_endpoint {
                b.push_str(&format!("    storage_custom_endpoint = {}\n", hcl_string(endpoint)));
            }
            b.push_str("  }\n");
            b
        }
        StateBackend::Azurerm => {
            let mut b = format!(
                "  backend \"azurerm\" {{\n    storage_account_name = {}\n    container_name       = {}\n    key                  = {}\n",
                hcl_string(account.state_storage_account.as_deref().unwrap_or_default()),
                hcl_string(&account.state_bucket),
                hcl_string(key),
            );
            // Entra ID for the blobs, with the account's identity (a
            // federated token or a client secret, from the environment),
            // unless the credential carries the storage account's key.
            if !settings.keyed {
                b.push_str("    use_azuread_auth     = true\n");
                if matches!(account.auth, AccountAuth::Oidc(_)) {
                    b.push_str("    use_oidc             = true\n");
                }
            }
            b.push_str("  }\n");
            b
        }
    }
}

/// `variable "input"`, the module call and a sensitive variable per
/// secret input. With `region`, the call also sets [`REGION_VARIABLE`]
/// (for modules that declare it).
pub fn module_call(
    request: &JobRequest,
    module: &ModuleRef,
    secret_vars: &[&str],
    region: Option<&str>,
) -> String {
    let mut main = format!(
        "variable \"input\" {{\n  type = any\n}}\n\nmodule \"{MODULE_NAME}\" {{\n  source = {}\n",
        hcl_string(&module.source)
    );
    if is_registry_source(&module.source) {
        main.push_str(&format!("  version = {}\n", hcl_string(&module.version)));
    }
    if let Some(input) = request.effective_input.as_object() {
        for key in input.keys() {
            if secret_vars.contains(&key.as_str()) {
                main.push_str(&format!("  {key} = var.{SECRET_VAR_PREFIX}{key}\n"));
            } else {
                main.push_str(&format!("  {key} = var.input[{}]\n", hcl_string(key)));
            }
        }
    }
    if let Some(region) = region {
        main.push_str(&format!("  {REGION_VARIABLE} = {}\n", hcl_string(region)));
    }
    main.push_str("}\n");
    for key in secret_vars {
        main.push_str(&format!(
            "\nvariable \"{SECRET_VAR_PREFIX}{key}\" {{\n  type      = string\n  sensitive = true\n}}\n"
        ));
    }
    main
}

/// How a sensitive output's value is kept in the Resource's outputs.
pub const SENSITIVE: &str = "<sensitive>";

/// The root module's outputs: each of the module's, sensitive as it says
/// (name → sensitive), so the Resource's outputs are the module's.
pub fn output_blocks(outputs: &std::collections::BTreeMap<String, bool>) -> String {
    let mut text = String::new();
    for (name, sensitive) in outputs {
        text.push_str(&format!(
            "output \"{name}\" {{\n  value     = module.{MODULE_NAME}.{name}\n  sensitive = {sensitive}\n}}\n"
        ));
    }
    text
}

/// `terraform.tfvars.json`: the effective input, as `var.input`.
pub fn tfvars(request: &JobRequest) -> String {
    serde_json::json!({ "input": request.effective_input }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::OidcTarget;

    fn request(backend: StateBackend, storage: Option<&str>, auth: AccountAuth) -> JobRequest {
        serde_json::from_value(serde_json::json!({
            "resource_id": "7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f", "resource_name": "r", "revision": 1,
            "operation": "apply", "effective_input": { "bucket": "b", "password": "db-admin" }, "region": "westeurope",
            "state_key": "heimdall/7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f.tfstate",
            "account": { "id": "1d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f", "provider": "azure", "region": "westeurope",
                "state_bucket": "tfstate", "state_backend": backend, "state_storage_account": storage,
                "state_endpoint": null, "auth": auth },
        }))
        .unwrap()
    }

    #[test]
    fn each_backend_keeps_one_state_per_resource_with_its_own_lock() {
        let static_auth = AccountAuth::Static { secret: "azure-sp".into() };
        let oidc = AccountAuth::Oidc(OidcTarget::default());
        let none = StateSettings::default();
        let azure =
            backend_block(&request(StateBackend::Azurerm, Some("acmestate"), static_auth.clone()), none);
        assert_eq!(
            azure,
            "  backend \"azurerm\" {\n    storage_account_name = \"acmestate\"\n    container_name       = \"tfstate\"\n    key                  = \"heimdall/7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f.tfstate\"\n    use_azuread_auth     = true\n  }\n"
        );
        let azure_oidc =
            backend_block(&request(StateBackend::Azurerm, Some("acmestate"), oidc.clone()), none);
        assert!(azure_oidc.contains("use_oidc             = true"), "{azure_oidc}");
        let keyed = StateSettings { keyed: true, ..none };
        let by_key = backend_block(&request(StateBackend::Azurerm, Some("acmestate"), oidc.clone()), keyed);
        assert!(!by_key.contains("use_azuread_auth") && !by_key.contains("use_oidc"), "{by_key}");
        let gcs = backend_block(&request(StateBackend::Gcs, None, oidc.clone()), none);
        assert_eq!(
            gcs,
            "  backend \"gcs\" {\n    bucket = \"tfstate\"\n    prefix = \"heimdall/7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f\"\n  }\n"
        );
        let s3 = backend_block(&request(StateBackend::S3, None, oidc), none);
        assert!(s3.contains("backend \"s3\"") && s3.contains("use_lockfile = true"), "{s3}");
        let local = StateSettings { local_dir: Some("/var/lib/heimdall/state/"), ..none };
        let quickstart = backend_block(&request(StateBackend::Gcs, None, static_auth), local);
        assert!(
            quickstart.contains("\"/var/lib/heimdall/state/7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f.tfstate\""),
            "{quickstart}"
        );
    }

    #[test]
    fn the_plan_holder_is_the_same_backend_at_the_plan_key() {
        let static_auth = AccountAuth::Static { secret: "azure-sp".into() };
        let none = StateSettings::default();
        let id = "7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f";
        let azure = request(StateBackend::Azurerm, Some("acmestate"), static_auth.clone());
        let holder = plan_holder(&azure, none);
        let state = backend_block(&azure, none);
        assert_eq!(
            holder,
            format!("terraform {{\n{}}}\n", state.replace(&format!("{id}.tfstate"), &format!("{id}.tfplan")))
        );
        let gcs = plan_holder(&request(StateBackend::Gcs, None, static_auth.clone()), none);
        assert!(gcs.contains(&format!("prefix = \"heimdall/{id}.tfplan\"")), "{gcs}");
        let s3 = plan_holder(&request(StateBackend::S3, None, static_auth.clone()), none);
        assert!(s3.contains(&format!("key          = \"heimdall/{id}.tfplan\"")), "{s3}");
        let local = StateSettings { local_dir: Some("/var/lib/heimdall/state"), ..none };
        let quickstart = plan_holder(&request(StateBackend::S3, None, static_auth), local);
        assert!(quickstart.contains(&format!("\"/var/lib/heimdall/state/{id}.tfplan\"")), "{quickstart}");
        assert!(!quickstart.contains("module"), "no module, so init installs no provider");
    }

    #[test]
    fn the_module_call_passes_input_and_secrets_by_variable() {
        let r = request(StateBackend::S3, None, AccountAuth::Static { secret: "k".into() });
        let module = ModuleRef { source: "acme/bucket/aws".into(), version: "1.2.0".into() };
        let main = module_call(&r, &module, &["password"], Some("eu-west-1"));
        assert!(
            main.contains("module \"resource\" {\n  source = \"acme/bucket/aws\"\n  version = \"1.2.0\"\n")
        );
        assert!(main.contains("  bucket = var.input[\"bucket\"]\n"));
        assert!(main.contains("  password = var.heimdall_secret_password\n"));
        assert!(main.contains("  heimdall_region = \"eu-west-1\"\n"));
        assert!(main.contains(
            "variable \"heimdall_secret_password\" {\n  type      = string\n  sensitive = true\n}"
        ));
        let local = ModuleRef { source: "./modules/bucket".into(), version: "1.2.0".into() };
        assert!(!module_call(&r, &local, &[], None).contains("version"));
    }

    #[test]
    fn strings_are_escaped_for_hcl() {
        assert_eq!(hcl_string("a\"b${x}"), "\"a\\\"b$${x}\"");
        assert!(is_registry_source("acme/bucket/aws"));
        assert!(!is_registry_source("./modules/bucket"));
        assert!(!is_registry_source("git::https://example.com/x.git"));
    }
}
