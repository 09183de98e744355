//! `terraform-provider-heimdall` driven by real Terraform (the test tools'
//! `.venv/bin/terraform`) against `heimdall dev`, as a platform team would:
//! apply one of each resource, a plan with nothing to do, drift made with
//! the CLI, three attributes changed, an import, a destroy refused while
//! something outside the configuration still uses a component, and a state
//! that never holds a secret's value.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use heimdall_e2e::{bin_dir, free_port, repo_root, Dev};

/// Where scripts/package.sh puts the provider: `<host>/heimdall/heimdall/<version>/<os_arch>/`.
const MIRROR_TARGET: &str = "mirror/heimdall.local/heimdall/heimdall/0.1.0/linux_amd64";
const PROVIDER_FILE: &str = "terraform-provider-heimdall_v0.1.0";

const VALUE: &str = "tf-state-must-never-hold-this-7c1e";

fn main_tf(domain: &str, policy_text: &str, team: &str) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    heimdall = {{ source = "heimdall.local/heimdall/heimdall", version = "0.1.0" }}
  }}
}}
provider "heimdall" {{}}
resource "heimdall_domain" "tools" {{
  name        = "{domain}"
  description = "Made by Terraform"
}}
resource "heimdall_system" "builds" {{
  name   = "builds"
  domain = heimdall_domain.tools.id
}}
resource "heimdall_component" "runner" {{
  name   = "runner"
  system = heimdall_system.builds.id
}}
resource "heimdall_environment" "staging" {{
  name = "staging"
}}
resource "heimdall_policy" "readers" {{
  name = "readers"
  text = "{policy_text}"
}}
resource "heimdall_secret" "token" {{
  name       = "runner-token"
  type       = "api-key"
  tags       = {{ team = "{team}" }}
  components = [heimdall_component.runner.name]
}}
data "heimdall_system" "builds" {{
  id = heimdall_system.builds.id
}}
data "heimdall_secret" "token" {{
  name = heimdall_secret.token.name
}}
output "system_domain" {{
  value = data.heimdall_system.builds.domain
}}
output "secret_team" {{
  value = data.heimdall_secret.token.tags["team"]
}}
"#
    )
}

const PERMIT: &str = r#"permit(principal, action == Heimdall::Action::\"secret.read\", resource);"#;
const ADMINS: &str = r#"permit(principal, action == Heimdall::Action::\"secret.read\", resource) when { principal.role == \"admin\" };"#;

/// The dev profile's URL, token and CA, as the provider reads them from
/// the environment.
fn profile_env(config_dir: &Path, work: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(config_dir.join("config.toml")).unwrap();
    let config: toml::Table = toml::from_str(&text).unwrap();
    let profile = &config["profiles"]["dev"];
    let ca = work.join("ca.pem");
    std::fs::write(&ca, profile["ca"].as_str().unwrap()).unwrap();
    vec![
        ("HEIMDALL_API_URL".into(), profile["api_url"].as_str().unwrap().into()),
        ("HEIMDALL_TOKEN".into(), profile["token"].as_str().unwrap().into()),
        ("HEIMDALL_CA_FILE".into(), ca.display().to_string()),
    ]
}

struct Terraform {
    work: std::path::PathBuf,
    env: Vec<(String, String)>,
}

impl Terraform {
    fn run(&self, args: &[&str]) -> Output {
        let terraform = repo_root().join(".venv/bin/terraform");
        assert!(terraform.exists(), "{} is missing: run scripts/install-test-tools.sh", terraform.display());
        Command::new(terraform)
            .args(args)
            .arg("-no-color")
            .current_dir(&self.work)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("TF_CLI_CONFIG_FILE", self.work.join("terraformrc"))
            .env("TF_IN_AUTOMATION", "1")
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let text = printed(&out);
        assert!(out.status.success(), "terraform {args:?} failed:\n{text}");
        text
    }
}

fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn terraform_manages_heimdall_through_the_provider() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config, work) = (tmp.path().join("data"), tmp.path().join("config"), tmp.path().join("tf"));
    std::fs::create_dir_all(&work).unwrap();
    let dev = Dev::start(&data, &config, free_port());
    // The provider as scripts/package.sh lays it out: a filesystem mirror,
    // `terraform init` offline.
    let target = work.join(MIRROR_TARGET);
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(bin_dir().join("terraform-provider-heimdall"), target.join(PROVIDER_FILE)).unwrap();
    let rc = format!(
        "disable_checkpoint = true\nprovider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
        work.join("mirror").display()
    );
    std::fs::write(work.join("terraformrc"), rc).unwrap();
    let tf = Terraform { env: profile_env(&config, &work), work: work.clone() };
    let cli = |line: &str| {
        let out = dev.sh(line);
        assert!(out.status.success(), "{line}: {}", printed(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    std::fs::write(work.join("main.tf"), main_tf("tools", PERMIT, "builds")).unwrap();
    let init = tf.ok(&["init"]);
    assert!(init.contains("heimdall.local/heimdall/heimdall v0.1.0"), "{init}");
    let applied = tf.ok(&["apply", "-auto-approve"]);
    assert!(applied.contains("Apply complete! Resources: 6 added, 0 changed, 0 destroyed."), "{applied}");
    assert!(cli("heimdall secret show runner-token --output json").contains("\"team\": \"builds\""));
    // Data sources read the same objects back, by id or by name.
    let outputs = tf.ok(&["output", "-json"]);
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(outputs["system_domain"]["value"], "tools", "{outputs}");
    assert_eq!(outputs["secret_team"]["value"], "builds", "{outputs}");

    // Nothing to do.
    let plan = tf.run(&["plan", "-detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", printed(&plan));

    // A value written beside it (in an environment outside the
    // configuration, which the dev Agent holds) never reaches the state.
    cli("heimdall environment create values");
    cli("heimdall environment assign-agent values dev");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out =
            dev.sh(&format!("printf '{VALUE}' | heimdall secret set runner-token --environment values"));
        if out.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "secret set: {}", printed(&out));
        std::thread::sleep(Duration::from_millis(500));
    }
    tf.ok(&["apply", "-refresh-only", "-auto-approve"]);
    let state = std::fs::read_to_string(work.join("terraform.tfstate")).unwrap();
    assert!(state.contains("runner-token") && !state.contains(VALUE), "the state holds no value");

    // Drift made with the CLI shows in the next plan.
    cli("heimdall policy update readers --description 'changed by hand'");
    let drift = tf.run(&["plan", "-detailed-exitcode"]);
    let shown = printed(&drift);
    assert_eq!(drift.status.code(), Some(2), "{shown}");
    assert!(shown.contains("\"changed by hand\" -> null"), "{shown}");

    // Three attributes change: exactly those are planned, in place.
    std::fs::write(work.join("main.tf"), main_tf("tooling", ADMINS, "platform")).unwrap();
    let plan = tf.ok(&["plan"]);
    assert!(plan.contains("Plan: 0 to add, 3 to change, 0 to destroy."), "{plan}");
    for line in ["\"tools\" -> \"tooling\"", "\"builds\" -> \"platform\"", "principal.role"] {
        assert!(plan.contains(line), "{line}: {plan}");
    }
    tf.ok(&["apply", "-auto-approve"]);
    assert!(cli("heimdall domain list").contains("tooling"));

    // An object made with the CLI, imported: nothing to change.
    cli("heimdall domain create imported");
    let mut with_import = main_tf("tooling", ADMINS, "platform");
    with_import.push_str("resource \"heimdall_domain\" \"imported\" {\n  name = \"imported\"\n}\n");
    std::fs::write(work.join("main.tf"), with_import).unwrap();
    tf.ok(&["import", "heimdall_domain.imported", "imported"]);
    let plan = tf.run(&["plan", "-detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", printed(&plan));

    // Destroy is refused while a secret made outside Terraform uses the
    // component: Heimdall's code, as a diagnostic.
    cli("heimdall secret create outside --component runner");
    let refused = tf.run(&["destroy", "-auto-approve"]);
    let shown = printed(&refused);
    assert!(!refused.status.success(), "{shown}");
    assert!(shown.contains("Heimdall refused: NOT_EMPTY"), "{shown}");
    assert!(!shown.contains("tf_provider::diagnostics"), "no backtrace in a diagnostic: {shown}");
    cli("heimdall secret delete outside");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cli("heimdall secret show outside --output json").contains("\"status\": \"deleted\"") {
        assert!(Instant::now() < deadline, "outside's deletion did not complete");
        std::thread::sleep(Duration::from_millis(500));
    }
    // runner-token's value is erased before its component goes: the
    // provider waits for the deletion to complete.
    let destroyed = tf.ok(&["destroy", "-auto-approve"]);
    assert!(destroyed.contains("Destroy complete!"), "{destroyed}");
    assert!(!cli("heimdall domain list").contains("tooling"));
    assert!(dev.stop().success());
}
