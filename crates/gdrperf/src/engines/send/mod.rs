//! The SEND/RECV streaming engine of gdr-send-bw: a sender keeping its queues full, a receiver
//! keeping receives posted, both measured.
//!
//! Unlike an RDMA WRITE, a SEND needs the receiver's cooperation: every message consumes one
//! receive the receiver posted beforehand, and a message that finds none is refused (RNR) and
//! retried later, which costs bandwidth. So the receiver posts `-r/--rx-depth` receives per QP
//! before the sender starts (in `prepare`, before the server says Ready) and reposts each one the
//! moment its completion is polled. Receives cannot be taken back once posted, so they outlive a
//! size: they are posted once per run ([`ReceiveQueues`](receiver::ReceiveQueues)) and each
//! receive covers the largest message of the sweep, so it fits whatever size consumes it.
//!
//! The sender works as the WRITE stream does (perftest's method: `-t` outstanding, one signaled
//! in `-Q`, the clock started at the first post). The receiver, which cannot know when the first
//! message was posted, starts its clock at the first receive completion, as perftest's receiver
//! does, and counts every message from there (under `-D`, those of the middle window of its own
//! clock, as the sender does on its clock). The last message of each phase (warm-up, measured)
//! of each QP carries an immediate value, so the receiver knows where the phase ends even in a
//! `-D` run, where no count is agreed.
//!
//! With `--validate` every payload is checked as it is polled, before its receive is reposted:
//! each receive then needs a slot of its own, in a host-memory ring per QP, and the receives kept
//! posted are as many as the ring has slots (the ring is capped at [`plan::VALIDATION_RING_BYTES`]).
//! The ring is host memory, so `--validate` is refused where the benchmark buffers are GPU
//! memory: it would no longer measure receiving into them.
//!
//! Staged memory (`--mem cuda-staged`) copies every message between payload and bounce ring
//! (`memory::queue_memory`): the sender copies each message out into its own slot before posting it,
//! the receiver's receives each land in a slot of its ring, and a receive is reposted only
//! after its message was copied in. One direction at a time. Its `--validate` checks each
//! message, stamped with its index, as it is copied in, instead of a host ring.
//!
//! Every sender holds a credit per receive posted (`engines::credits`): the receiver grants its
//! whole depth at the start of the connection and returns credits in batches as it reposts, with
//! zero-byte SENDs the sender keeps receives for. One way, those are receives of their own
//! (`post_credit_receives`). With `-b` both directions share one receive queue per QP, where a
//! credit lands in whatever receive is next: each side then posts
//! [`CREDIT_RECEIVES`](crate::engines::credits::CREDIT_RECEIVES) receives beyond the `-r` it
//! grants (and its send queue has as many entries beyond `-t` for its own credits), so that neither data nor credits ever find the queue empty. A credit is told from
//! data by its immediate value (data carries none, or `PHASE_END`).
//!
//! Ctrl-C stops posting; what is in flight completes, and the size ends with the interruption.
//! A peer that dies or gives up is noticed through the control channel (`check_peer`).
//!
//! The loop over a size is `stream.rs`, its halves `sender.rs` and `receiver.rs`, what both
//! halves share `plan.rs`, and the engine a bench uses ([`SendStream`]) `side.rs`.

mod plan;
mod receiver;
mod sender;
mod side;
mod stream;

pub use side::SendStream;
