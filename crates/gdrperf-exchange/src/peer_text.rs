//! A peer's text made safe to print: the project's one cleaning function, kept in
//! `gdrperf-files` (below every crate that reads text from outside: a peer's messages here,
//! result files and Slurm records in the report and the CLI) and used here where a message is
//! decoded.

pub use gdrperf_files::text::{is_unsafe_character, printable, printable_within, PEER_TEXT_CHARS};
