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
/// writes is refused rather than waited on.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
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
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
