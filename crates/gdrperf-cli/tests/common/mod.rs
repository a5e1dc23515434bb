//! What the CLI's integration tests share: running the built `gdrperf`, reading what it printed,
//! a scratch folder, and stand-in bench scripts. Each test file takes what it needs (`mod
//! common;`), so not every file uses every item.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the built `gdrperf` with `args` and extra environment `env`, and waits for it.
pub fn gdrperf(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gdrperf"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("running gdrperf")
}

/// stdout then stderr, as a user would read them on a terminal.
pub fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// A scratch folder under the system's temporary folder, emptied when made and removed on drop.
/// The process id in its name keeps test binaries that run at once apart.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("gdrperf-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }

    /// Writes `contents` to `name` inside the folder and returns the file's path as text.
    pub fn write(&self, name: &str, contents: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path.display().to_string()
    }

    /// Writes an executable script `bin/NAME` (a stand-in bench) and returns the `bin` folder,
    /// the `--bench-dir` to give.
    pub fn script(&self, name: &str, contents: &str) -> PathBuf {
        let dir = self.0.join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        write_executable(&dir.join(name), contents);
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `contents` to `path` with mode 0755.
pub fn write_executable(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
