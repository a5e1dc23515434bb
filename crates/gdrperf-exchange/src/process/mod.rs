//! What a gdrperf run shares about its process: the operator's request to stop ([`stop`]:
//! SIGINT and SIGTERM taken over during a sweep) and the program's name that starts every line
//! printed on stderr ([`program_name`]).
//!
//! The control channel looks at the stop flag while it waits on a peer (a run spends its waits
//! there) and names the program when it turns a client away; the harness installs the handlers
//! and turns a stop into the shell's exit code. It lives here, with its first user, because the
//! harness depends on this crate and not the other way round.

pub mod stop;

pub use stop::{install_signal_handlers, SignalError, StopFlag, StopSignal};

/// This process's binary name ("gdr-write-bw"), which starts every line it prints on stderr.
pub fn program_name() -> String {
    let program = std::env::args_os().next().map(|path| {
        let path = path.to_string_lossy().into_owned();
        std::path::Path::new(&path)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or(path)
    });
    program.unwrap_or_else(|| "gdrperf".into())
}
