//! Items put aside in files by bucket and read back one bucket at a time: how the gather orders
//! what it reads rank by rank (a pair's two sides lie in two ranks' files, a node's matrix lines
//! in every rank's) without holding the whole job in memory. Memory is one bucket's items and a
//! write buffer per bucket, however many pairs the job ran; the buckets are few (a few hundred at
//! most), so their files stay open under a usual limit of open files.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{read_error, write_error, Result};
use crate::layout::create_temporary;

/// The most buckets one spill opens files for.
pub(crate) const MOST_BUCKETS: usize = 256;

/// JSON lines in one temporary file per bucket (created when first put to), removed when read
/// back or when the spill is dropped.
pub(crate) struct Spill {
    /// Where the temporaries go: beside this path, as `NAME.<pid>-<n>.partial`.
    name: PathBuf,
    files: Vec<Option<(PathBuf, BufWriter<File>)>>,
}

impl Spill {
    pub(crate) fn new(name: PathBuf, buckets: usize) -> Spill {
        Spill { name, files: (0..buckets).map(|_| None).collect() }
    }

    pub(crate) fn put<T: Serialize>(&mut self, bucket: usize, item: &T) -> Result<()> {
        if self.files[bucket].is_none() {
            let (path, file) = create_temporary(&self.name)?;
            self.files[bucket] = Some((path, BufWriter::new(file)));
        }
        let Some((path, writer)) = &mut self.files[bucket] else { unreachable!("created above") };
        serde_json::to_writer(&mut *writer, item)
            .map_err(std::io::Error::other)
            .and_then(|()| writer.write_all(b"\n"))
            .map_err(|source| write_error(path, source))
    }

    /// Calls `each` with the items of `bucket` in the order they were put, then removes its file.
    pub(crate) fn take<T: DeserializeOwned>(
        &mut self,
        bucket: usize,
        each: &mut dyn FnMut(T) -> Result<()>,
    ) -> Result<()> {
        let Some((path, writer)) = self.files[bucket].take() else { return Ok(()) };
        let read = read_back(&path, writer, each);
        let _ = std::fs::remove_file(&path);
        read
    }
}

fn read_back<T: DeserializeOwned>(
    path: &Path,
    writer: BufWriter<File>,
    each: &mut dyn FnMut(T) -> Result<()>,
) -> Result<()> {
    let mut file = writer.into_inner().map_err(|error| write_error(path, error.into_error()))?;
    file.rewind().map_err(|error| read_error(path, error))?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|error| read_error(path, error))? == 0 {
            return Ok(());
        }
        each(serde_json::from_str(&line).map_err(|error| read_error(path, error))?)?;
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        for (path, _) in self.files.iter().flatten() {
            let _ = std::fs::remove_file(path);
        }
    }
}
