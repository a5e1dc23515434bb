//! gdrperf's files in folders other users may write to (a Slurm job's shared folder, an
//! acceptance folder on a shared file system, `/tmp`).
//!
//! - [`write`](mod@write): every output file is written under a new temporary name (`O_CREAT|O_EXCL`,
//!   which follows no link) and renamed onto its name, so a reader never sees half a file and a
//!   link planted at either name is never followed: at the temporary name the create fails, at
//!   the final name the write is refused with the link named.
//! - [`read`](mod@read): every input file is read only if it is a regular file (not a FIFO, a device or a
//!   link) and only up to a stated size, so that `/dev/zero`, a FIFO nobody writes or a file of
//!   many gigabytes is a clear error, not a hang or an exhausted memory.
//! - [`columns`]: the names of the result files' columns, one constant each, and each table's
//!   published order, so that a renamed column is a compile error in every reader.
//! - [`prometheus`]: Prometheus's text format for node_exporter's textfile collector (`--prom`),
//!   written through [`write`](mod@write) so a scrape never reads half a file.
//! - [`text`]: the project's one cleaning function for text from outside (a peer's message, a
//!   result file, a Slurm record, a manifest's names): control, bidirectional and format
//!   characters escaped, the whole cut to a stated length.

pub mod columns;
pub mod prometheus;
pub mod read;
pub mod text;
pub mod write;

pub use read::{
    open_named, open_regular, read_bounded, read_named_text, read_text_bounded, TooLarge,
    MAX_RESULT_FILE_BYTES, MAX_SMALL_FILE_BYTES,
};
pub use text::{printable, printable_within};
pub use write::{create_fresh, write_file, NewFile};
