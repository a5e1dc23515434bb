//! Records the git commit the binaries are built from, so that every file they write names it (a
//! result is only comparable to another if one knows what code produced it).
//!
//! The value is `<40-digit commit>` or `<commit>-dirty` (tracked files differ from it), taken from
//! `git rev-parse HEAD` and `git status` of the sources (crates/, benches/, Cargo.toml, Cargo.lock). A build outside a git checkout (a source tarball) records
//! `unknown (built outside a git checkout)` unless `GDRPERF_GIT_COMMIT` is set when building.
//! The full id is kept: a 12-digit prefix is all decimal digits about once in 300 commits, and
//! then reads as a number rather than a commit.

use std::path::Path;
use std::process::Command;

/// `git ARGS` in the workspace, its trimmed output when it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=GDRPERF_GIT_COMMIT");
    let commit = match std::env::var("GDRPERF_GIT_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => match git(&["rev-parse", "HEAD"]).filter(|commit| !commit.is_empty()) {
            Some(commit) => {
                // Only what the binaries are built from: a result file rewritten by a run (a
                // tracked file under results/) does not make the next build "dirty".
                let sources = [":/crates", ":/benches", ":/Cargo.toml", ":/Cargo.lock"];
                let dirty =
                    git(&[&["status", "--porcelain", "--untracked-files=no", "--"][..], &sources].concat())
                        .is_some_and(|status| !status.is_empty());
                if dirty {
                    format!("{commit}-dirty")
                } else {
                    commit
                }
            }
            None => "unknown (built outside a git checkout)".to_string(),
        },
    };
    println!("cargo:rustc-env=GDRPERF_GIT_COMMIT={commit}");
    // Re-run when HEAD moves (a commit, a checkout, a reset) or files are staged. `--git-path`
    // finds them in a linked worktree too, where `.git` is a file; HEAD names a branch whose ref
    // is a loose file or a line of packed-refs.
    let mut watched = Vec::new();
    for name in ["HEAD", "index", "packed-refs"] {
        watched.extend(git(&["rev-parse", "--git-path", name]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    for path in watched.iter().filter(|path| Path::new(path).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    // Edits to tracked sources make the tree dirty without touching git's files.
    println!("cargo:rerun-if-changed=..");
    println!("cargo:rerun-if-changed=../../benches");
    println!("cargo:rerun-if-changed=../../Cargo.lock");
}
