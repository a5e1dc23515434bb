//! Output files written through a new temporary file and a rename.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written under a temporary name beside `path`, renamed onto `path` by
/// [`NewFile::commit`]; dropped without a commit, the temporary file is removed.
pub struct NewFile {
    path: PathBuf,
    temporary: PathBuf,
    file: Option<File>,
}

/// Refuses a `path` that is a symbolic link: in a folder another user can write to, a link there
/// is someone's attempt to make this run overwrite the file it points to (the rename would only
/// replace the link, but a link the user made on purpose should not silently become a file).
fn refuse_link(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(io::Error::other(format!(
            "{} is a symbolic link: refused (an output is never written through a link; remove it \
             or choose another folder)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// `X.<pid>-<n>.partial` beside `path` (n counts this process's files), so that no two writers
/// share a temporary name.
fn temporary_name(path: &Path) -> PathBuf {
    static FILES: AtomicU64 = AtomicU64::new(0);
    let count = FILES.fetch_add(1, Ordering::Relaxed);
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".{}-{count}.partial", std::process::id()));
    PathBuf::from(name)
}

impl NewFile {
    /// Starts a new file for `path`: refuses a link at `path`, and creates the temporary file
    /// with `O_CREAT|O_EXCL` (a link, or anything, already at its name is an error, never
    /// followed). Readable too, for writers that read back what they put aside.
    pub fn create(path: &Path) -> io::Result<NewFile> {
        refuse_link(path)?;
        let temporary = temporary_name(path);
        let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&temporary)?;
        Ok(NewFile { path: path.to_path_buf(), temporary, file: Some(file) })
    }

    /// The temporary file's name, for messages.
    pub fn temporary(&self) -> &Path {
        &self.temporary
    }

    /// The open temporary file.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("a NewFile holds its file until commit")
    }

    /// Renames the temporary file onto the path (again refusing a link planted there since
    /// [`NewFile::create`]) and returns the still open file.
    pub fn commit(mut self) -> io::Result<File> {
        let file = self.file.take().expect("a NewFile holds its file until commit");
        refuse_link(&self.path)?;
        std::fs::rename(&self.temporary, &self.path)?;
        self.temporary = PathBuf::new();
        Ok(file)
    }
}

impl Write for NewFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file().write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.temporary.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Writes `bytes` to `path` through a new temporary file and a rename (see [`NewFile`]).
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = NewFile::create(path)?;
    file.write_all(bytes)?;
    file.commit().map(drop)
}

/// A new, empty file at `path`, open for writing: made under a temporary name and renamed at
/// once, for a file written as it goes (a log a child process writes into). An earlier file at
/// `path` is replaced; a link there is refused.
pub fn create_fresh(path: &Path) -> io::Result<File> {
    NewFile::create(path)?.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let folder = std::env::temp_dir().join(format!("gdrperf-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        folder
    }

    #[test]
    fn a_file_is_written_whole_and_an_earlier_one_replaced() {
        let folder = folder("whole");
        let path = folder.join("fleet.txt");
        std::fs::write(&path, "old\n").unwrap();
        write_file(&path, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let mut log = create_fresh(&folder.join("bench.log")).unwrap();
        log.write_all(b"line\n").unwrap();
        assert_eq!(std::fs::read_to_string(folder.join("bench.log")).unwrap(), "line\n");
        let names: Vec<_> =
            std::fs::read_dir(&folder).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn a_link_planted_at_the_name_is_refused_and_its_target_untouched() {
        let folder = folder("planted");
        let victim = folder.join("victim.txt");
        std::fs::write(&victim, "mine\n").unwrap();
        let path = folder.join("report.html");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let error = write_file(&path, b"owned\n").unwrap_err();
        assert!(error.to_string().contains("is a symbolic link"), "{error}");
        let error = create_fresh(&path).unwrap_err();
        assert!(error.to_string().contains("is a symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n", "the link was followed");
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn a_file_dropped_unfinished_leaves_nothing() {
        let folder = folder("dropped");
        let mut file = NewFile::create(&folder.join("summary.csv")).unwrap();
        file.write_all(b"half").unwrap();
        drop(file);
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
