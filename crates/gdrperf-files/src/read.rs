//! Input files read only when regular, and only up to a stated size.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// An input over its size limit.
#[derive(Debug)]
pub struct TooLarge {
    pub limit: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "larger than the {} bytes such a file may be", self.limit)
    }
}

impl std::error::Error for TooLarge {}

/// Opens `path` for reading if it is a regular file: a link (`O_NOFOLLOW`), a FIFO, a device or
/// a folder is an error naming what it is. The FIFO is opened non-blocking, so that one nobody
/// writes is refused rather than waited on. For files found inside a folder another user may
/// write to; a path the user named goes through [`open_named`].
pub fn open_regular(path: &Path) -> io::Result<File> {
    open(path, libc::O_NOFOLLOW)
}

/// [`open_regular`] for a path the user named on the command line: a link there is the user's
/// own and is followed; what it leads to must still be a regular file.
pub fn open_named(path: &Path) -> io::Result<File> {
    open(path, 0)
}

fn open(path: &Path, flags: libc::c_int) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other("is a symbolic link: not read (give the file's real path)"),
            _ => error,
        })?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() { "a folder" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(io::Error::other(format!("is {what}: not read")));
    }
    Ok(file)
}

/// The bytes of the regular file at `path`, at most `limit` of them: more is an error
/// ([`TooLarge`]), never a partial read taken for the whole.
pub fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(TooLarge { limit }));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text_bounded(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_bounded(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// The text of a file the user named (see [`open_named`]), at most `limit` bytes of it: more is
/// an error ([`TooLarge`]).
pub fn read_named_text(path: &Path, limit: u64) -> io::Result<String> {
    let file = open_named(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(TooLarge { limit }));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// The most of a result file (CSV or JSON) any reader takes: a sweep's file is tens of KiB and a
/// long soak's a few MiB; a file above this is refused, not read into memory.
pub const MAX_RESULT_FILE_BYTES: u64 = 256 << 20;

/// The most of a small input (a profile, a plan, a decision file, an interval's result) read.
pub const MAX_SMALL_FILE_BYTES: u64 = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let folder = std::env::temp_dir().join(format!("gdrperf-files-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("summary.json");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_text_bounded(&file, 10).unwrap(), "0123456789");
        let error = read_bounded(&file, 9).unwrap_err();
        assert!(error.to_string().contains("larger than the 9 bytes"), "{error}");
        let link = folder.join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_bounded(&link, 100).unwrap_err().to_string().contains("symbolic link"));
        let error = read_bounded(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let fifo = folder.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = read_bounded(&fifo, 100).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "a FIFO nobody writes: {error}");
        assert!(read_bounded(&folder, 100).unwrap_err().to_string().contains("a folder"));
        // A path the user named may be a link of theirs; what it leads to is still checked.
        assert_eq!(read_named_text(&link, 100).unwrap(), "0123456789");
        assert!(read_named_text(&link, 5).unwrap_err().to_string().contains("larger than the 5 bytes"));
        let to_device = folder.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &to_device).unwrap();
        assert!(read_named_text(&to_device, 100).unwrap_err().to_string().contains("not a regular file"));
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
