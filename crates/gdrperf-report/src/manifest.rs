//! The manifest of an acceptance folder: every raw file with its size and SHA-256, so that a
//! signed report names exactly the evidence it was made from. The list is written in
//! `sha256sum`'s format inside the report, so `sha256sum -c` checks a copy of the folder.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{ReportError, Result};

/// One file of the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// Relative to the folder, `/`-separated (`read_lat-host-rxe0-hdr/read_lat-2B.hdr`).
    pub path: String,
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: String,
}

/// Every regular file under `folder` (recursively, in path order), except the names in
/// `leave_out` (the report itself, which cannot hold its own digest).
pub fn manifest(folder: &Path, leave_out: &[&str]) -> Result<Vec<ManifestEntry>> {
    let mut files = Vec::new();
    collect(folder, folder, &mut files)?;
    files.sort();
    let mut entries = Vec::new();
    for relative in files {
        let path = relative.to_string_lossy().replace('\\', "/");
        if leave_out.contains(&path.as_str()) {
            continue;
        }
        let full = folder.join(&relative);
        let contents = std::fs::read(&full).map_err(|error| ReportError::ReadFile { path: full, error })?;
        entries.push(ManifestEntry { path, bytes: contents.len() as u64, sha256: sha256_hex(&contents) });
    }
    Ok(entries)
}

fn collect(root: &Path, directory: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(directory)
        .map_err(|error| ReportError::ReadFile { path: directory.to_path_buf(), error })?;
    for entry in entries {
        let entry = entry.map_err(|error| ReportError::ReadFile { path: directory.to_path_buf(), error })?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|error| ReportError::ReadFile { path: path.clone(), error })?;
        if kind.is_dir() {
            collect(root, &path, files)?;
        } else if kind.is_file() {
            files.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

/// SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The manifest in `sha256sum`'s format: `DIGEST  PATH` per line.
pub fn sha256sum_text(entries: &[ManifestEntry]) -> String {
    entries.iter().map(|entry| format!("{}  {}\n", entry.sha256, entry.path)).collect()
}

/// Checks `sha256sum`-format text against the files under `folder`: the lines that do not
/// match (a changed or missing file), worded for a person. Empty: every file is as recorded.
pub fn verify(folder: &Path, text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let Some((digest, path)) = line.split_once("  ") else {
                return Some(format!("not a manifest line: {line:?}"));
            };
            match std::fs::read(folder.join(path)) {
                Ok(contents) if sha256_hex(&contents) == digest => None,
                Ok(_) => Some(format!("{path}: changed since the report was written")),
                Err(error) => Some(format!("{path}: {error}")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_of_a_known_text_is_the_published_one() {
        // FIPS 180-2 appendix B.1: SHA-256("abc").
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn a_changed_or_missing_file_fails_verification() {
        let folder = std::env::temp_dir().join(format!("gdrperf-manifest-{}", std::process::id()));
        std::fs::create_dir_all(folder.join("sub")).unwrap();
        std::fs::write(folder.join("a.csv"), "x\n").unwrap();
        std::fs::write(folder.join("sub/b.hdr"), "y\n").unwrap();
        std::fs::write(folder.join("report.html"), "left out\n").unwrap();
        let entries = manifest(&folder, &["report.html"]).unwrap();
        let paths: Vec<&str> = entries.iter().map(|entry| entry.path.as_str()).collect();
        assert_eq!(paths, ["a.csv", "sub/b.hdr"]);
        let text = sha256sum_text(&entries);
        assert!(verify(&folder, &text).is_empty());
        std::fs::write(folder.join("a.csv"), "z\n").unwrap();
        std::fs::remove_file(folder.join("sub/b.hdr")).unwrap();
        let problems = verify(&folder, &text);
        std::fs::remove_dir_all(&folder).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("a.csv: changed"), "{problems:?}");
    }
}
