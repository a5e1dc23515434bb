//! A simulated NIC: the verbs of this crate done as copies between registered regions of one
//! process, so that the harness and its engines run, post, poll and check data without an RDMA
//! device (in `cargo test`, on a laptop, on a GPU host without a NIC).
//!
//! It is never a measurement: its devices are named [`DEVICE_NAME`] ("simulated0") and
//! `simulated1` to `simulated7` (each a port of its own, at the same configured rate), which every
//! result row carries in its `device` column and the run header prints, and its figures come from
//! a configured rate and latency, not from hardware.
//!
//! What it honours, as a NIC does: keys (a request quoting an lkey or rkey that no region of the
//! QP's protection domain has fails), access rights (of the region and of the target QP), bounds,
//! queue depths (a post beyond the send or receive depth fails with ENOMEM, slots of unsignalled
//! requests free when a later signalled one is polled), signalling (only signalled requests and
//! errors complete), receive-not-ready (a SEND or WRITE with immediate finding no receive waits
//! and retries, as `rnr_retry` 7 does), in-order execution per QP, error completions (remote
//! access, local protection, length, a peer QP destroyed: "transport retry counter exceeded",
//! then every later request flushed).
//!
//! One NIC thread per process executes the requests in order of their due time: a request is
//! due when the simulated port has sent the bytes queued before it and its own (at the configured
//! rate) plus the configured latency. Server and client must live in one process (`--loopback`,
//! `--concurrent` lanes, or two threads of a test): the simulated QPs find each other in a
//! process-wide registry by QP number, and two processes share no memory. Cross-process runs
//! are not supported.
//!
//! Settings come from the environment variable [`ENVIRONMENT`] (`GDRPERF_SIMULATED_NIC`): set at
//! all, it lists the simulated device first (so it is the default device); its value is
//! `1` or a comma-separated list of `rate=GBIT_PER_S`, `latency=MICROSECONDS`, the injected
//! fault `fail_after=N` (the N-th request the NIC executes in this process fails with "transport
//! retry counter exceeded", as a vanished peer's would), `rnr_retry=N` (0 to 7, as the QP
//! attribute: a SEND or WRITE with immediate that finds no receive N times more fails with "RNR
//! retry counter exceeded"; 7, the default, retries for ever as the benches' QPs do), and the
//! test hook `post_list=N` (a post call carrying data of any other number of requests fails with
//! EINVAL: a bench's `-l` lists, checked; calls of zero-byte requests, gdr-send-bw's credits, are
//! not lists and pass). `rnr_retry=0` turns every receiver-not-ready into an error, so a
//! run that passes under it never sent without a credit: what Soft-RoCE's RNR counters show, made
//! a decision.
//!
//! The parts: `settings` (the device names; rate, latency and faults), `state` (the NIC's state
//! behind one lock), `memory` (a registration's memory and the copies), `regions` (protection
//! domains and keys), `queue_pair` (the verbs a bench calls: completion queues, queue pairs,
//! posts) and `execution` (opening the device, and the NIC thread that carries the posted
//! requests out).

mod execution;
mod memory;
mod queue_pair;
mod regions;
mod settings;
mod state;

pub(crate) use execution::open;
pub use memory::CopiedMemory;
pub(crate) use queue_pair::{create_qp, CompletionQueue, QueuePairHandle};
pub(crate) use regions::{alloc_pd, register, ProtectionDomain, RegisteredRegion};
pub use settings::{is_simulated, listed, port_of, Settings, DEVICE_COUNT, DEVICE_NAME, ENVIRONMENT};
