use super::*;
use serde_json::json;

const RESOURCE: &str = "7d0c5d4e-8a9b-4c1d-9e2f-0a1b2c3d4e5f";

fn resource(revision: i64, status: &str) -> Resource {
    serde_json::from_value(json!({
        "id": RESOURCE, "org_id": "00000000-0000-0000-0000-000000000001", "name": "orders",
        "component_id": "00000000-0000-0000-0000-000000000002", "environment_id": "00000000-0000-0000-0000-000000000003",
        "schema_id": "00000000-0000-0000-0000-000000000004", "status": status, "revision": revision,
        "created_at": "2026-12-01T10:00:00Z", "created_by": "ana@example.com", "updated_at": "2026-12-01T10:00:00Z",
    }))
    .unwrap()
}

fn job(revision: i64, operation: &str, status: &str, module: bool) -> Job {
    let mut request = json!({
        "resource_id": RESOURCE, "resource_name": "orders", "revision": revision, "operation": operation,
        "effective_input": { "name": "orders", "admin_password": "orders-admin" }, "region": "eu-west-1",
        "state_key": format!("heimdall/{RESOURCE}.tfstate"),
        "secret_inputs": [{ "variable": "admin_password", "secret": "orders-admin" }],
        "environment_id": "00000000-0000-0000-0000-000000000007", "environment": "prod",
        "account": { "id": "00000000-0000-0000-0000-000000000005", "provider": "aws", "region": "eu-west-1",
            "state_bucket": "acme-state", "auth": { "kind": "static", "secret": "aws-keys" } },
    });
    if module {
        request["module"] = json!({ "source": "acme/database/aws", "version": "2.0.0" });
    }
    serde_json::from_value(json!({
        "id": uuid::Uuid::new_v4(), "org_id": "00000000-0000-0000-0000-000000000001", "resource_id": RESOURCE,
        "operation": operation, "status": status, "attempts": 1, "max_attempts": 3, "request": request,
        "queued_at": "2026-12-01T10:00:00Z", "finished_at": "2026-12-01T10:01:00Z",
    }))
    .unwrap()
}

#[test]
fn the_package_is_the_last_applied_root_module_without_a_credential() {
    let jobs = [
        job(1, "apply", "completed", true),
        job(2, "apply", "completed", true),
        job(2, "apply", "failed", true),
    ];
    let package = package(&resource(2, "provisioned"), &jobs).unwrap();
    assert_eq!(package.revision, 2);
    let file = |name: &str| package.files.iter().find(|f| f.path == name).map(|f| f.content.clone()).unwrap();
    let backend = file("backend.tf");
    assert!(backend.contains(&format!("key          = \"heimdall/{RESOURCE}.tfstate\"")), "{backend}");
    assert!(backend.contains("use_lockfile = true"), "{backend}");
    let main = file("main.tf");
    assert!(
        main.contains("module \"resource\" {\n  source = \"acme/database/aws\"\n  version = \"2.0.0\""),
        "{main}"
    );
    assert!(main.contains("variable \"heimdall_secret_admin_password\""), "{main}");
    // The environment by name, the command as it runs: no placeholder.
    assert!(file("README.md").contains(
        "TF_VAR_heimdall_secret_admin_password=\"$(heimdall secret get orders-admin --environment prod)\""
    ));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&file("terraform.tfvars.json")).unwrap()["input"]["name"],
        "orders"
    );
    let all: String = package.files.iter().map(|f| f.content.as_str()).collect();
    assert!(!all.contains("aws-keys"), "the credential's secret is named nowhere");
}

#[test]
fn nothing_applied_or_no_module_is_refused() {
    for (resource, jobs) in [
        (resource(2, "queued"), vec![job(1, "apply", "completed", true), job(2, "apply", "queued", true)]),
        (
            resource(1, "deleted"),
            vec![job(1, "apply", "completed", true), job(1, "destroy", "completed", true)],
        ),
        (resource(1, "provisioned"), vec![job(1, "apply", "completed", false)]),
    ] {
        let err = package(&resource, &jobs).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
    }
}
