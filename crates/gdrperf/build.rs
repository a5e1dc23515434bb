//! Records the git commit the binaries are built from, for the metadata of every result file
//! (a result is only comparable to another if one knows what code produced it).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .filter(|commit| !commit.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|output| output.status.success() && !output.stdout.is_empty());
    println!("cargo:rustc-env=GDRPERF_GIT_COMMIT={commit}{}", if dirty { "-dirty" } else { "" });
    // Rebuild when HEAD moves (a commit, a checkout); the paths are relative to this crate.
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
