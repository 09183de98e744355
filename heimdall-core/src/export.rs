//! `heimdall terraform export`: the root module of a Resource's last
//! applied job as a package that plain `terraform` runs against the same
//! state. The files are what the Agent writes (`crate::root_module`), so
//! the package addresses the same objects; no credential is in it, and
//! each secret input is a variable left for the user to fill.

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::infra::{Job, JobOperation, JobStatus, Resource};
use crate::root_module::{
    backend_block, module_call, output_blocks, tfvars, StateSettings, SECRET_VAR_PREFIX, SENSITIVE,
};

/// One file of an export package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportFile {
    /// Relative to the package's directory.
    pub path: String,
    pub content: String,
}

/// The package, file by file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportPackage {
    pub resource_id: crate::ids::ResourceId,
    /// The revision whose apply the package reproduces.
    pub revision: i64,
    pub files: Vec<ExportFile>,
}

/// The package for `resource`, from its jobs: the last completed apply of
/// its current revision. `CONFLICT` when there is none (nothing to
/// reproduce yet, or the Resource was destroyed) or when the job ran the
/// module its Agent's operator maps to the schema's type (the API does
/// not know which).
pub fn package(resource: &Resource, jobs: &[Job]) -> Result<ExportPackage, ApiError> {
    let applied = jobs
        .iter()
        .filter(|j| {
            j.operation == JobOperation::Apply
                && j.status == JobStatus::Completed
                && j.request.revision == resource.revision
        })
        .max_by_key(|j| j.finished_at);
    let Some(job) = applied else {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "Resource {} has no completed apply of its revision {}: there is nothing to export yet",
                resource.name, resource.revision
            ),
        ));
    };
    if resource.status == crate::infra::ResourceStatus::Deleted {
        return Err(ApiError::new(ErrorCode::Conflict, format!("Resource {} was destroyed", resource.name)));
    }
    let request = &job.request;
    let Some(module) = &request.module else {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "the schema names no module: its Agent ran the one its operator maps to the type, which the API does not know",
        ));
    };
    let module = crate::runner::at_its_version(module.clone())?;
    let secrets: Vec<&str> = request.secret_inputs.iter().map(|s| s.variable.as_str()).collect();
    let backend = backend_block(request, StateSettings::default());
    let mut files = vec![
        ExportFile { path: "backend.tf".into(), content: format!("terraform {{\n{backend}}}\n") },
        ExportFile { path: "main.tf".into(), content: module_call(request, &module, &secrets, None) },
        ExportFile { path: "terraform.tfvars.json".into(), content: tfvars(request) + "\n" },
    ];
    // The Agent's root module re-exports the module's outputs: so does the
    // package, or a plan would remove them from the state.
    if let Some(outputs) = resource.outputs.as_object().filter(|o| !o.is_empty()) {
        let outputs = outputs.iter().map(|(name, value)| (name.clone(), value == SENSITIVE)).collect();
        files.push(ExportFile { path: "outputs.tf".into(), content: output_blocks(&outputs) });
    }
    files.push(ExportFile { path: "README.md".into(), content: readme(resource, job, &secrets) });
    Ok(ExportPackage { resource_id: resource.id, revision: resource.revision, files })
}

fn readme(resource: &Resource, job: &Job, secrets: &[&str]) -> String {
    let request = &job.request;
    let module = request.module.as_ref().map(|m| format!("{} {}", m.source, m.version)).unwrap_or_default();
    let mut text = format!(
        "# {name}, exported from Heimdall\n\n\
         Resource `{id}`, revision {revision}: the module `{module}` with the input\n\
         Heimdall applied (job `{job}`), and the backend of the same state\n\
         (`{backend}`, key `{key}`, region `{region}`). No credential is in this\n\
         directory: run it with your own.\n\n\
         ```sh\nterraform init\nterraform plan -detailed-exitcode   # exit code 0: no changes\n```\n\n",
        name = resource.name,
        id = resource.id,
        revision = resource.revision,
        job = job.id,
        backend = request.account.state_backend,
        key = request.state_key,
        region = request.account.region,
    );
    if request.account.provider == crate::infra::Provider::Aws {
        text.push_str(&format!(
            "Heimdall ran it in region `{}`: set `AWS_REGION` to it. A module that declares\n\
             `variable \"heimdall_region\"` also needs `heimdall_region = \"{}\"` in the module block.\n\n",
            request.region, request.region
        ));
    }
    if !secrets.is_empty() {
        text.push_str(
            "Secret inputs are variables left for you to fill, e.g. in your environment:\n\n```sh\n",
        );
        // The environment by name where the job recorded it (a job from
        // before it did names it by id; either works with `secret get`).
        let environment = request
            .environment
            .clone()
            .or_else(|| request.environment_id.map(|id| id.to_string()))
            .unwrap_or_else(|| "<env>".to_owned());
        for name in secrets {
            let secret =
                request.secret_inputs.iter().find(|s| s.variable == *name).map(|s| s.secret.as_str());
            text.push_str(&format!(
                "export TF_VAR_{SECRET_VAR_PREFIX}{name}=\"$(heimdall secret get {} --environment {environment})\"\n",
                secret.unwrap_or_default()
            ));
        }
        text.push_str("```\n\n");
    }
    text.push_str(
        "While Heimdall manages the Resource, an `apply` from here is a change it did not\n\
         approve and will undo at its next apply. To hand the Resource back after a change\n\
         made here, request the same input through Heimdall (`heimdall resource update`),\n\
         which then plans no changes.\n",
    );
    text
}

#[cfg(test)]
mod tests;
