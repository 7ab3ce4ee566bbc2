//! The process-wide signal state (dispositions, the blocked mask, a `signalfd`, `raise`) and
//! `fork`: the only calls rustix does not wrap, so they go to libc here, in one place. rustix
//! leaves them out on purpose — the C library owns that state (glibc reserves signals of its
//! own and runs atfork handlers), and going round it would corrupt its bookkeeping. Every other
//! syscall the crate makes goes through rustix.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use rustix::process::{Pid, Signal};

/// The named signals and how `kill -l` and the man pages spell them (what a report shows).
const NAMES: [(Signal, &str); 31] = [
    (Signal::HUP, "SIGHUP"),
    (Signal::INT, "SIGINT"),
    (Signal::QUIT, "SIGQUIT"),
    (Signal::ILL, "SIGILL"),
    (Signal::TRAP, "SIGTRAP"),
    (Signal::ABORT, "SIGABRT"),
    (Signal::BUS, "SIGBUS"),
    (Signal::FPE, "SIGFPE"),
    (Signal::KILL, "SIGKILL"),
    (Signal::USR1, "SIGUSR1"),
    (Signal::SEGV, "SIGSEGV"),
    (Signal::USR2, "SIGUSR2"),
    (Signal::PIPE, "SIGPIPE"),
    (Signal::ALARM, "SIGALRM"),
    (Signal::TERM, "SIGTERM"),
    (Signal::STKFLT, "SIGSTKFLT"),
    (Signal::CHILD, "SIGCHLD"),
    (Signal::CONT, "SIGCONT"),
    (Signal::STOP, "SIGSTOP"),
    (Signal::TSTP, "SIGTSTP"),
    (Signal::TTIN, "SIGTTIN"),
    (Signal::TTOU, "SIGTTOU"),
    (Signal::URG, "SIGURG"),
    (Signal::XCPU, "SIGXCPU"),
    (Signal::XFSZ, "SIGXFSZ"),
    (Signal::VTALARM, "SIGVTALRM"),
    (Signal::PROF, "SIGPROF"),
    (Signal::WINCH, "SIGWINCH"),
    (Signal::IO, "SIGIO"),
    (Signal::POWER, "SIGPWR"),
    (Signal::SYS, "SIGSYS"),
];

/// `SIGKILL` for 9; `None` for a number that is not a named signal (a real-time one).
pub fn name(signo: i32) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(s, _)| s.as_raw() == signo)
        .map(|(_, name)| *name)
}

/// A set of signals, for [`block`] and [`signalfd`].
pub struct SigSet(libc::sigset_t);

impl SigSet {
    pub fn empty() -> Self {
        // SAFETY: sigemptyset initialises the whole set it is given.
        unsafe {
            let mut set = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            SigSet(set)
        }
    }

    pub fn add(&mut self, signal: Signal) {
        // SAFETY: the set is initialised and every named signal is a valid member.
        unsafe {
            libc::sigaddset(&mut self.0, signal.as_raw());
        }
    }
}

/// Gives `signal` its default action (the disposition, not a handler: no code of ours ever
/// runs in signal context).
pub fn reset_to_default(signal: Signal) -> io::Result<()> {
    // SAFETY: SIG_DFL installs no handler.
    if unsafe { libc::signal(signal.as_raw(), libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Adds `set` to the blocked mask (`SIG_BLOCK`).
pub fn block(set: &SigSet) -> io::Result<()> {
    set_mask(libc::SIG_BLOCK, set)
}

/// Blocks nothing (`SIG_SETMASK` with an empty set). Async-signal-safe: no allocation, so it
/// may run in a forked child.
pub fn unblock_all() -> io::Result<()> {
    set_mask(libc::SIG_SETMASK, &SigSet::empty())
}

fn set_mask(how: libc::c_int, set: &SigSet) -> io::Result<()> {
    // SAFETY: `set` is an initialised sigset_t; the old mask is not asked for.
    match unsafe { libc::sigprocmask(how, &set.0, std::ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A non-blocking, close-on-exec `signalfd` for `set` (which should be blocked).
pub fn signalfd(set: &SigSet) -> io::Result<OwnedFd> {
    // SAFETY: `set` is an initialised sigset_t; -1 asks for a new descriptor.
    let fd = unsafe { libc::signalfd(-1, &set.0, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
    // SAFETY: a plain call; the caller chose the disposition the signal meets.
    match unsafe { libc::raise(signal.as_raw()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Which side of [`fork`] this is.
pub enum Fork {
    Child,
    Parent(Pid),
}

/// `fork(2)` through libc, so its atfork handlers run.
///
/// # Safety
/// As for `fork` itself: the caller must be single-threaded, or the child may only make
/// async-signal-safe calls until it execs or exits.
pub unsafe fn fork() -> io::Result<Fork> {
    // SAFETY: the caller upholds the contract above.
    match unsafe { libc::fork() } {
        0 => Ok(Fork::Child),
        pid if pid > 0 => Pid::from_raw(pid)
            .map(Fork::Parent)
            .ok_or_else(io::Error::last_os_error),
        _ => Err(io::Error::last_os_error()),
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
}
