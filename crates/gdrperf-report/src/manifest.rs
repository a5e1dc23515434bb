//! The manifest of an acceptance folder: every file with its size and SHA-256, in
//! `sha256sum`'s format inside the report, so that `sha256sum -c` checks a copy of the folder.
//!
//! What it proves: that the folder's files are the ones the page was made from (consistency),
//! nothing about who made either (origin). Anyone who can edit the folder can edit a result and
//! run `gdrperf report` again, and the new page's manifest matches. So the page's own SHA-256 is
//! printed when it is written, for the signer to record somewhere the folder's writers cannot
//! reach (a ticket, a signed mail); a page whose digest matches the recorded one, and whose
//! manifest `--check` passes, is then the evidence as it was signed.
//!
//! The folder is read as it is, never through a link: a symbolic link, a FIFO, a device or a
//! name that is not UTF-8 is an error naming it (the page shows only files inside the folder, so
//! every file it shows is covered), and a page's names are checked as relative paths inside the
//! folder before any is opened.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

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

/// Every file under `folder` (recursively, in path order), except the names in `leave_out` (the
/// report itself, which cannot hold its own digest). A symbolic link or anything but a regular
/// file or a folder is an error: the manifest would leave it out, and the page could show it.
pub fn manifest(folder: &Path, leave_out: &[&str]) -> Result<Vec<ManifestEntry>> {
    let mut files = Vec::new();
    collect(folder, folder, &mut files)?;
    files.sort();
    let mut entries = Vec::new();
    for path in files {
        if leave_out.contains(&path.as_str()) {
            continue;
        }
        let (bytes, sha256) = digest_inside(folder, &path)?;
        entries.push(ManifestEntry { path, bytes, sha256 });
    }
    Ok(entries)
}

fn refused(path: PathBuf, why: &str) -> ReportError {
    ReportError::ReadFile { path, error: std::io::Error::other(why.to_string()) }
}

fn collect(root: &Path, directory: &Path, files: &mut Vec<String>) -> Result<()> {
    let entries = std::fs::read_dir(directory)
        .map_err(|error| ReportError::ReadFile { path: directory.to_path_buf(), error })?;
    for entry in entries {
        let entry = entry.map_err(|error| ReportError::ReadFile { path: directory.to_path_buf(), error })?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|error| ReportError::ReadFile { path: path.clone(), error })?;
        if kind.is_symlink() {
            return Err(refused(
                path,
                "is a symbolic link: the report covers only files inside the folder (copy the file in instead)",
            ));
        } else if kind.is_dir() {
            collect(root, &path, files)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let Some(name) = relative.to_str() else {
                return Err(refused(path, "has a name that is not UTF-8: rename it"));
            };
            files.push(name.to_string());
        } else {
            return Err(refused(path, "is not a regular file (a FIFO, socket or device): remove it"));
        }
    }
    Ok(())
}

/// `relative` as a path inside `folder`, every step of it checked: only plain names (no `/`
/// at the start, no `..`, no `.`), and no step a symbolic link. `None` otherwise.
pub fn inside(folder: &Path, relative: &str) -> Option<PathBuf> {
    let relative = Path::new(relative);
    let plain = relative.components().all(|component| matches!(component, Component::Normal(_)));
    if !plain || relative.as_os_str().is_empty() {
        return None;
    }
    let mut path = folder.to_path_buf();
    for component in relative.components() {
        path.push(component);
        if std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
            return None;
        }
    }
    Some(path)
}

/// The largest JSON file the page reads (summary, inventory, a result file): far above any
/// real one (a sweep's result file is tens of KiB), far below what would exhaust memory.
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// The bytes of the file `relative` inside `folder` (see [`inside`]), a regular file of at most
/// [`MAX_JSON_BYTES`].
pub fn read_inside(folder: &Path, relative: &str) -> Result<Vec<u8>> {
    let path = inside(folder, relative).ok_or_else(|| {
        refused(
            folder.join(relative),
            "is not a plain path inside the folder (absolute, `..` or a link): not read",
        )
    })?;
    gdrperf_files::read_bounded(&path, MAX_JSON_BYTES).map_err(|error| ReportError::ReadFile { path, error })
}

/// The size and SHA-256 of the file `relative` inside `folder`, read in pieces (any size), a
/// regular file only.
fn digest_inside(folder: &Path, relative: &str) -> Result<(u64, String)> {
    let path = inside(folder, relative).ok_or_else(|| {
        refused(
            folder.join(relative),
            "is not a plain path inside the folder (absolute, `..` or a link): not read",
        )
    })?;
    let read_error = |error| ReportError::ReadFile { path: path.clone(), error };
    let mut file = gdrperf_files::open_regular(&path).map_err(read_error)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let read = file.read(&mut buffer).map_err(read_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        bytes += read as u64;
    }
    Ok((bytes, hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()))
}

/// SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The manifest in `sha256sum`'s format: `DIGEST  PATH` per line. A name holding a backslash or
/// a newline is written as GNU `sha256sum` writes it: the line starts with a backslash, and the
/// name's backslashes and newlines are written `\\` and `\n`.
pub fn sha256sum_text(entries: &[ManifestEntry]) -> String {
    entries
        .iter()
        .map(|entry| {
            if entry.path.contains(['\\', '\n']) {
                let name = entry.path.replace('\\', "\\\\").replace('\n', "\\n");
                format!("\\{}  {name}\n", entry.sha256)
            } else {
                format!("{}  {}\n", entry.sha256, entry.path)
            }
        })
        .collect()
}

/// One line of `sha256sum` text: the digest and the name, unescaped. `None`: not such a line.
fn parse_line(line: &str) -> Option<(&str, String)> {
    let (escaped, line) = match line.strip_prefix('\\') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (digest, name) = line.split_once("  ")?;
    if digest.len() != 64 || !digest.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    if !escaped {
        return Some((digest, name.to_string()));
    }
    let mut out = String::new();
    let mut characters = name.chars();
    while let Some(character) = characters.next() {
        match (character, character == '\\') {
            (_, true) => match characters.next()? {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                _ => return None,
            },
            (other, false) => out.push(other),
        }
    }
    Some((digest, out))
}

/// Checks `sha256sum`-format text against the files under `folder`: the lines that do not
/// match (a changed or missing file, a name outside the folder, a link or special file), then
/// the files of the folder the manifest does not list (but `leave_out`, the report itself),
/// each worded for a person. Empty: the folder is as recorded. Names are shown cleaned (a
/// name may hold any character).
pub fn verify(folder: &Path, text: &str, leave_out: &[&str]) -> Vec<String> {
    let show = |name: &str| gdrperf_files::printable_within(name, 1000);
    let mut listed = Vec::new();
    let mut problems: Vec<String> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let Some((digest, path)) = parse_line(line) else {
                return Some(format!("not a manifest line: {}", show(line)));
            };
            let outcome = match digest_inside(folder, &path) {
                Ok((_, sha256)) if sha256 == digest => None,
                Ok(_) => Some(format!("{}: changed since the report was written", show(&path))),
                Err(ReportError::ReadFile { error, .. }) => Some(format!("{}: {error}", show(&path))),
                Err(error) => Some(format!("{}: {error}", show(&path))),
            };
            listed.push(path);
            outcome
        })
        .collect();
    let mut present = Vec::new();
    match collect(folder, folder, &mut present) {
        Ok(()) => {
            present.sort();
            for path in present {
                if !listed.contains(&path) && !leave_out.contains(&path.as_str()) {
                    problems.push(format!(
                        "{}: not in the manifest (added after the report was written)",
                        show(&path)
                    ));
                }
            }
        }
        Err(error) => problems.push(error.to_string()),
    }
    problems
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
        assert!(verify(&folder, &text, &["report.html"]).is_empty());
        std::fs::write(folder.join("a.csv"), "z\n").unwrap();
        std::fs::remove_file(folder.join("sub/b.hdr")).unwrap();
        let problems = verify(&folder, &text, &["report.html"]);
        std::fs::remove_dir_all(&folder).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("a.csv: changed"), "{problems:?}");
    }

    fn folder(name: &str) -> PathBuf {
        let folder = std::env::temp_dir().join(format!("gdrperf-manifest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        folder
    }

    #[test]
    fn names_with_a_backslash_or_a_newline_are_escaped_as_sha256sum_does() {
        let folder = folder("escape");
        std::fs::write(folder.join("a\\b.csv"), "x\n").unwrap();
        std::fs::write(folder.join("two\nlines.csv"), "y\n").unwrap();
        std::fs::write(folder.join("plain.csv"), "z\n").unwrap();
        let entries = manifest(&folder, &[]).unwrap();
        let text = sha256sum_text(&entries);
        // GNU coreutils' form: a leading backslash, then `\\` and `\n` in the name.
        let digest = sha256_hex(b"x\n");
        assert!(text.contains(&format!("\\{digest}  a\\\\b.csv\n")), "{text}");
        assert!(text.contains(&format!("\\{}  two\\nlines.csv\n", sha256_hex(b"y\n"))), "{text}");
        assert!(text.contains(&format!("{}  plain.csv\n", sha256_hex(b"z\n"))), "{text}");
        assert_eq!(text.lines().count(), 3, "one line per file: {text}");
        assert_eq!(verify(&folder, &text, &[]), Vec::<String>::new());
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn links_special_files_and_paths_outside_the_folder_are_refused() {
        let folder = folder("refused");
        let outside = folder.with_extension("outside");
        std::fs::write(&outside, "elsewhere\n").unwrap();
        std::fs::write(folder.join("a.csv"), "x\n").unwrap();
        std::os::unix::fs::symlink(&outside, folder.join("summary.json")).unwrap();
        let error = manifest(&folder, &[]).unwrap_err().to_string();
        assert!(error.contains("summary.json") && error.contains("symbolic link"), "{error}");
        std::fs::remove_file(folder.join("summary.json")).unwrap();
        let fifo = std::ffi::CString::new(folder.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let error = manifest(&folder, &[]).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        std::fs::remove_file(folder.join("pipe")).unwrap();
        for name in ["/etc/passwd", "../x.outside", "sub/../../x", "./a.csv"] {
            assert!(inside(&folder, name).is_none(), "{name}");
        }
        // A manifest naming /dev/zero, a path outside or a FIFO: each a line of its own, no hang.
        let forged = format!("{d}  /dev/zero\n{d}  ../gdrperf-x\n{d}  a.csv\n", d = "0".repeat(64));
        let problems = verify(&folder, &forged, &[]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("not a plain path inside the folder"), "{problems:?}");
        assert!(problems[2].starts_with("a.csv: changed"), "{problems:?}");
        std::fs::remove_dir_all(&folder).unwrap();
        std::fs::remove_file(&outside).unwrap();
    }

    #[test]
    fn a_file_added_after_the_report_is_named() {
        let folder = folder("unlisted");
        std::fs::write(folder.join("a.csv"), "x\n").unwrap();
        let text = sha256sum_text(&manifest(&folder, &[]).unwrap());
        std::fs::write(folder.join("extra.json"), "{}\n").unwrap();
        std::fs::write(folder.join("report.html"), "the page\n").unwrap();
        assert_eq!(
            verify(&folder, &text, &["report.html"]),
            ["extra.json: not in the manifest (added after the report was written)"]
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
