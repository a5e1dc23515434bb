//! Where a message's bytes live and what happens to them around the wire: the registered
//! buffers and their data pattern, staged copies through a bounce buffer for memory the NIC
//! does not reach, and the hooks an engine calls before it posts and after a message lands.
//! Look here for "how is GPU memory registered?", "what does `cuda-staged` copy, and when?" or
//! "how is a received message checked?".
//!
//! An engine is written once, generic over `QueueMemory`, and this module makes each kind of
//! memory fit it. Staging's buffers, copy engines and hooks are here; the loops that wait on a
//! staged copy (`engines::staged_receive`, the latency loops' `staged`) only call them.
//! - `buffers`: the benchmark buffers (host, GPU, staged); a staged one holds a copy engine.
//! - `pattern`: the data pattern of `--validate`, and where a buffer differs from it.
//! - [`staging`]: staged copies: the copy engine's trait and log, its two engines (CUDA, or host
//!   for the tests), the wait for one copy, and the ring of bounce slots (`Staged`) with its
//!   copy-ahead rule.
//! - `queue_memory`: the trait of the hooks an engine calls around a message, and its two kinds
//!   named together: `Direct` does nothing, `Staged` (staging's) copies through the ring.

pub(crate) mod buffers;
pub(crate) mod check_failure;
pub(crate) mod pattern;
pub(crate) mod queue_memory;
pub(crate) mod spin;
pub mod staging;
