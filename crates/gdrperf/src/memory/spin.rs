//! A busy wait bounded by a timeout, for copies the data path cannot block on.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Spins until `done` says so, the way `staging::wait_copy` waits for one copy: the clock is read only
/// every few thousand turns, and after `timeout` the wait ends in [`Error::Stalled`] saying
/// `what` was going on. For waits on copies that are not one `CopyId` (a message's copy-in).
#[inline]
pub fn spin_until(
    timeout: Duration,
    what: &dyn Fn() -> String,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let mut spins = 0u32;
    let mut deadline = None;
    while !done()? {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) {
            let now = Instant::now();
            match deadline {
                None => deadline = Some(now + timeout),
                Some(deadline) if now > deadline => {
                    return Err(Error::Stalled { seconds: timeout.as_secs(), during: what() })
                }
                Some(_) => {}
            }
        }
        std::hint::spin_loop();
    }
    Ok(())
}
