//! `terraform export`.

use std::path::Path;

use super::Context;
use crate::args::TerraformCommand;
use crate::error::{CliError, Result};

pub async fn run(ctx: &Context, cmd: TerraformCommand) -> Result<()> {
    match cmd {
        TerraformCommand::Export { resource, out } => {
            // Checked before asking: nothing of a package lands over other files.
            ensure_empty(&out)?;
            let package = ctx.client()?.export_resource(&resource).await?;
            std::fs::create_dir_all(&out)
                .map_err(|e| CliError::local(format!("cannot create {}: {e}", out.display())))?;
            let mut written = Vec::new();
            for file in &package.files {
                // The API names plain files; anything else is not written.
                let name = Path::new(&file.path);
                if name.components().count() != 1 || name.file_name().is_none() {
                    return Err(CliError::local(format!("the package names an odd path: {}", file.path)));
                }
                let path = out.join(name);
                std::fs::write(&path, &file.content)
                    .map_err(|e| CliError::local(format!("cannot write {}: {e}", path.display())))?;
                written.push(format!("  {}", path.display()));
            }
            let line = format!(
                "Exported {} revision {} to {}: run `terraform init && terraform plan` there",
                package.resource_id,
                package.revision,
                out.display()
            );
            ctx.out.done(&package, &line, &written)
        }
    }
}

fn ensure_empty(dir: &Path) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(entries) => match entries.count() {
            0 => Ok(()),
            _ => Err(CliError::usage(format!(
                "--out {} is not empty: export into a new directory",
                dir.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::local(format!("cannot read {}: {e}", dir.display()))),
    }
}
