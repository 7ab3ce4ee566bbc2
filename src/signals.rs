//! The process-wide signal state (dispositions, the blocked mask, a `signalfd`, `raise`) and
//! `fork`: the only calls rustix does not wrap (it leaves them to the C library on purpose —
//! glibc reserves signals of its own and runs atfork handlers), so they go through `nix` here,
//! in one place. Every other syscall the crate makes goes through rustix.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use nix::sys::signal::{self as nix_signal, SigHandler, SigmaskHow};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use rustix::process::{Pid, Signal};

/// How `kill -l` and the man pages spell signal `signo` (`SIGKILL` for 9); `None` for a number
/// that is not a named signal (a real-time one).
pub fn name(signo: i32) -> Option<&'static str> {
    nix_signal::Signal::try_from(signo).ok().map(|s| s.as_str())
}

/// rustix's name for a signal, in nix's terms (every named signal has one).
fn to_nix(signal: Signal) -> io::Result<nix_signal::Signal> {
    nix_signal::Signal::try_from(signal.as_raw()).map_err(io::Error::from)
}

/// A set of signals, for [`block`] and [`signalfd`].
pub struct SigSet(nix_signal::SigSet);

impl SigSet {
    pub fn empty() -> Self {
        SigSet(nix_signal::SigSet::empty())
    }

    pub fn add(&mut self, signal: Signal) -> io::Result<()> {
        self.0.add(to_nix(signal)?);
        Ok(())
    }
}

/// Gives `signal` its default action (the disposition, not a handler: no code of ours ever
/// runs in signal context).
pub fn reset_to_default(signal: Signal) -> io::Result<()> {
    // SAFETY: SIG_DFL installs no handler, so no code runs in signal context.
    unsafe { nix_signal::signal(to_nix(signal)?, SigHandler::SigDfl) }
        .map(drop)
        .map_err(io::Error::from)
}

/// Adds `set` to the blocked mask (`SIG_BLOCK`).
pub fn block(set: &SigSet) -> io::Result<()> {
    nix_signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set.0), None).map_err(io::Error::from)
}

/// Blocks nothing (`SIG_SETMASK` with an empty set). Async-signal-safe: no allocation, so it
/// may run in a forked child.
pub fn unblock_all() -> io::Result<()> {
    let none = nix_signal::SigSet::empty();
    nix_signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&none), None).map_err(io::Error::from)
}

/// A non-blocking, close-on-exec `signalfd` for `set` (which should be blocked).
pub fn signalfd(set: &SigSet) -> io::Result<OwnedFd> {
    SignalFd::with_flags(&set.0, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map(OwnedFd::from)
        .map_err(io::Error::from)
}

/// The number of the next pending signal on a [`signalfd`], `None` once none is left.
pub fn next_signal(fd: impl AsFd) -> io::Result<Option<i32>> {
    let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
    match rustix::io::read(fd, &mut info) {
        // `ssi_signo` is the record's first field, a u32.
        Ok(n) if n == info.len() => Ok(Some(i32::from_ne_bytes([
            info[0], info[1], info[2], info[3],
        ]))),
        // The kernel only hands out whole records.
        Ok(_) => Ok(None),
        Err(rustix::io::Errno::AGAIN) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Sends `signal` to the calling thread.
pub fn raise(signal: Signal) -> io::Result<()> {
    nix_signal::raise(to_nix(signal)?).map_err(io::Error::from)
}

/// Which side of [`fork`] this is.
pub enum Fork {
    Child,
    Parent(Pid),
}

/// `fork(2)` through the C library, so its atfork handlers run.
///
/// # Safety
/// As for `fork` itself: the caller must be single-threaded, or the child may only make
/// async-signal-safe calls until it execs or exits.
pub unsafe fn fork() -> io::Result<Fork> {
    // SAFETY: the caller upholds the contract above.
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Child => Ok(Fork::Child),
        nix::unistd::ForkResult::Parent { child } => Pid::from_raw(child.as_raw())
            .map(Fork::Parent)
            .ok_or_else(|| io::Error::other("fork returned no child pid")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_c_library() {
        assert_eq!(name(libc::SIGKILL), Some("SIGKILL"));
        assert_eq!(name(libc::SIGALRM), Some("SIGALRM"));
        assert_eq!(name(libc::SIGCHLD), Some("SIGCHLD"));
        assert_eq!(name(libc::SIGPWR), Some("SIGPWR"));
        assert_eq!(name(libc::SIGRTMIN()), None);
        assert_eq!(name(0), None);
    }

    #[test]
    fn every_named_signal_has_a_nix_name() {
        for raw in 1..32 {
            if let Some(signal) = Signal::from_named_raw(raw) {
                assert!(to_nix(signal).is_ok(), "signal {raw}");
            }
        }
    }
}
