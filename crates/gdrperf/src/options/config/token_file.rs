//! `--token-file PATH`: the run's secret read from a file its owner alone can read.

use crate::error::{ConfigError, Result};

/// The most of a token file read: a token is one line of at most a few hundred characters.
const TOKEN_FILE_MAX_BYTES: u64 = 4096;

/// The secret of `--token-file PATH`: its first line, without the line end. Like ssh with a
/// private key, a file others can read is refused (mode bits for group or other set: `chmod 600
/// FILE`), and so is anything but a regular file of at most [`TOKEN_FILE_MAX_BYTES`] (a FIFO, a
/// device such as /dev/zero: issue 44).
pub(super) fn read_token_file(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let refuse = |problem: String| ConfigError::Malformed {
        flag: "--token-file",
        value: path.display().to_string(),
        problem,
    };
    let file = std::fs::File::open(path).map_err(|error| refuse(format!("cannot be read: {error}")))?;
    let metadata = file.metadata().map_err(|error| refuse(format!("cannot be read: {error}")))?;
    if !metadata.is_file() {
        return Err(refuse("is not a regular file".into()).into());
    }
    let mode = metadata.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "can be read or written by other users (mode {:o}): a secret must not be; run `chmod 600 {}`",
            mode & 0o777,
            path.display()
        ))
        .into());
    }
    let mut bytes = Vec::new();
    file.take(TOKEN_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| refuse(format!("cannot be read: {error}")))?;
    if bytes.len() as u64 > TOKEN_FILE_MAX_BYTES {
        return Err(
            refuse(format!("is over {TOKEN_FILE_MAX_BYTES} bytes: a token file holds one line")).into()
        );
    }
    let text = String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text".into()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}
