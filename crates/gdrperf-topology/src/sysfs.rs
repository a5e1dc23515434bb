//! Reading sysfs and procfs under a chosen root directory.
//!
//! Every fact the doctor and `-d auto` use comes through [`SysRoot`], never through an
//! absolute path, so the same code reads the live `/sys` of a server and a
//! fixture tree in a temporary directory. Sysfs is full of files that exist
//! but cannot be read (a GID type for an empty GID slot answers `EINVAL`, PCI
//! config space past 64 bytes needs root), so reads return `Option`: a missing
//! fact is reported as unknown, never as an error that hides the rest.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::TopologyError;

/// The directory that holds `sys/` and `proc/`: `/` on a live machine.
#[derive(Debug, Clone)]
pub struct SysRoot {
    /// Canonical form of the root, so that resolved symlinks can be made
    /// relative to it again.
    root: PathBuf,
}

impl SysRoot {
    /// Opens a root; it must be a directory holding `sys/`, otherwise nothing
    /// below could be trusted to mean "absent".
    pub fn open(root: &Path) -> Result<Self, TopologyError> {
        let canonical = fs::canonicalize(root)
            .map_err(|source| TopologyError::RootUnreadable { root: root.to_path_buf(), source })?;
        if !canonical.join("sys").is_dir() {
            return Err(TopologyError::NoSysUnderRoot { root: root.to_path_buf() });
        }
        Ok(SysRoot { root: canonical })
    }

    /// The root as given to [`SysRoot::open`], canonicalized.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute path of `relative` (a path like `sys/class/infiniband`) under the root.
    pub fn path(&self, relative: impl AsRef<Path>) -> PathBuf {
        let relative = relative.as_ref();
        let relative = relative.strip_prefix("/").unwrap_or(relative);
        self.root.join(relative)
    }

    /// Whether anything (file, directory, or symlink to one) exists there.
    pub fn exists(&self, relative: impl AsRef<Path>) -> bool {
        self.path(relative).exists()
    }

    /// A text attribute without its trailing newline; `None` when it is absent,
    /// unreadable, or not UTF-8.
    pub fn read_text(&self, relative: impl AsRef<Path>) -> Option<String> {
        let text = fs::read_to_string(self.path(relative)).ok()?;
        Some(text.trim_end().to_string())
    }

    /// A binary attribute (PCI config space).
    pub fn read_bytes(&self, relative: impl AsRef<Path>) -> Option<Vec<u8>> {
        fs::read(self.path(relative)).ok()
    }

    /// A hexadecimal attribute such as `vendor` (`0x10de`) or `class` (`0x030200`).
    pub fn read_hex(&self, relative: impl AsRef<Path>) -> Option<u32> {
        let text = self.read_text(relative)?;
        u32::from_str_radix(text.trim_start_matches("0x"), 16).ok()
    }

    /// A decimal attribute; sysfs writes `-1` for "unknown" (for example a
    /// NUMA node on a single-socket machine), which becomes `None`.
    pub fn read_unsigned(&self, relative: impl AsRef<Path>) -> Option<u32> {
        self.read_text(relative)?.parse::<i64>().ok().and_then(|value| u32::try_from(value).ok())
    }

    /// Names in a directory, sorted (sysfs order is creation order, which
    /// differs between boots); empty when the directory is absent.
    pub fn list(&self, relative: impl AsRef<Path>) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.path(relative)) else {
            return Vec::new();
        };
        let mut names: Vec<String> =
            entries.filter_map(|entry| entry.ok()?.file_name().into_string().ok()).collect();
        names.sort();
        names
    }

    /// Follows every symlink and returns the target relative to the root
    /// (`sys/devices/pci0000:00/...`), or `None` if it is missing or leads
    /// outside the root (an absolute symlink in a fixture).
    pub fn resolve(&self, relative: impl AsRef<Path>) -> Option<PathBuf> {
        let canonical = fs::canonicalize(self.path(relative)).ok()?;
        canonical.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// The last component of a symlink's target, the way sysfs names a
    /// device's driver (`driver -> ../../bus/pci/drivers/nvidia`).
    pub fn link_name(&self, relative: impl AsRef<Path>) -> Option<String> {
        let target = fs::read_link(self.path(relative)).ok()?;
        Some(target.file_name()?.to_str()?.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty directory of its own under the system's temporary directory, removed on drop.
    struct EmptyDir(PathBuf);

    impl EmptyDir {
        fn new(name: &str) -> EmptyDir {
            let path = std::env::temp_dir().join(format!("gdrperf-topology-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).unwrap();
            EmptyDir(path)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for EmptyDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn open_refuses_a_directory_without_sys() {
        let empty = EmptyDir::new("no-sys");
        let error = SysRoot::open(empty.path()).unwrap_err();
        assert!(matches!(error, TopologyError::NoSysUnderRoot { .. }), "{error}");
    }

    #[test]
    fn open_refuses_a_missing_root() {
        let error = SysRoot::open(Path::new("/nonexistent/gdrperf-doctor-root")).unwrap_err();
        assert!(matches!(error, TopologyError::RootUnreadable { .. }), "{error}");
    }

    #[test]
    fn numbers_follow_sysfs_conventions() {
        let dir = EmptyDir::new("numbers");
        fs::create_dir_all(dir.path().join("sys")).unwrap();
        fs::write(dir.path().join("sys/numa_node"), "-1\n").unwrap();
        fs::write(dir.path().join("sys/class"), "0x030200\n").unwrap();
        let sys = SysRoot::open(dir.path()).unwrap();
        assert_eq!(sys.read_unsigned("sys/numa_node"), None);
        assert_eq!(sys.read_hex("/sys/class"), Some(0x030200));
        assert_eq!(sys.read_text("sys/absent"), None);
        assert!(sys.list("sys/absent").is_empty());
    }
}
