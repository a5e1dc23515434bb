//! A fixture on disk for the length of a test.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::machine::Machine;

/// A temporary directory holding a fixture, removed when dropped.
#[derive(Debug)]
pub struct FixtureDir {
    path: PathBuf,
}

impl FixtureDir {
    /// An empty directory under the system temp dir, unique to this process and call.
    pub fn empty() -> io::Result<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique =
            format!("gdrperf-doctor-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(unique);
        if path.exists() {
            fs::remove_dir_all(&path)?;
        }
        fs::create_dir_all(&path)?;
        Ok(FixtureDir { path })
    }

    /// A directory with `machine` written into it.
    pub fn with(machine: &Machine) -> io::Result<Self> {
        let directory = FixtureDir::empty()?;
        machine.write(&directory.path)?;
        Ok(directory)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FixtureDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}
