//! Small helpers shared by the tasks: the workspace root and running commands.

use std::path::PathBuf;
use std::process::Command;

/// The workspace root (the parent of the `xtask` folder).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Runs a command to completion, failing with a message naming it.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed with {status}", cmd.get_program()))
    }
}

/// Runs `cmd`, a `cargo metadata` command line, and returns its standard
/// output; a failure names cargo's own message.
pub(crate) fn cargo_metadata(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(output.stdout)
}
