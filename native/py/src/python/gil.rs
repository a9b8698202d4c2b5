//! When a thread began to wait for the GIL: what tells a plug-in that holds it in one call
//! into C (every thread of the process waits) from a host too loaded to run the plug-ins'
//! watchdog on time (checks/plugins/isolate.py). Python cannot tell the two apart itself:
//! its clocks are read only once the GIL is taken back, so a late wake-up and a long wait for
//! the GIL read the same, and while the wait lasts no Python code of that thread runs to say
//! that it waits.
//!
//! A plain C function, called through ctypes, which lets the GIL go around the call and
//! takes it back after the call returned. Taking it back inside a Rust frame would not do:
//! a daemon thread that takes the GIL back while the interpreter exits is ended by
//! `pthread_exit`, whose unwinding a pyo3 function's panic guard catches, and the process
//! aborts ("FATAL: exception not rethrown").

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

/// Waits until `fd` is readable, or `timeout_ms` milliseconds passed (-1: no limit), and
/// empties it (a non-blocking pipe of wake-ups: read here, so that the caller makes no call
/// that lets the GIL go between two timed waits). On entry, with the GIL let go, adds one
/// to `watch[1]` (the waits begun); on waking, stores in
/// `watch[0]` when it stopped waiting, by CLOCK_MONOTONIC in nanoseconds (Python's
/// `time.perf_counter_ns()` on Linux). From then until the caller runs again it waits for
/// the GIL; any thread holding the GIL can read how long so far. However late the host wakes
/// the thread, that lateness is before `watch[0]`.
///
/// # Safety
/// `watch` points to two live, aligned `u64`s that outlive the call (a ctypes `c_uint64 * 2`).
#[no_mangle]
pub unsafe extern "C" fn faultgate_wait_readable(fd: c_int, timeout_ms: c_int, watch: *mut u64) {
    // SAFETY: the caller's promise; atomic, as threads holding the GIL read them meanwhile
    let (woke_at, begun) = unsafe { (AtomicU64::from_ptr(watch), AtomicU64::from_ptr(watch.add(1))) };
    begun.fetch_add(1, Ordering::Release);
    let mut watched = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the call's length. What it returns is not needed: an
    // error (a signal, a closed fd) only ends the wait early, and the caller looks again.
    if unsafe { libc::poll(&mut watched, 1, timeout_ms) } > 0 && watched.revents & libc::POLLIN != 0 {
        let mut drained = [0u8; 512];
        // SAFETY: a live buffer of its own length; the fd is non-blocking, and how much was
        // read does not matter (a wake-up left over only ends the next wait early)
        unsafe { libc::read(fd, drained.as_mut_ptr().cast(), drained.len()) };
    }
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec; CLOCK_MONOTONIC cannot fail
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    woke_at.store((now.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(now.tv_nsec as u64), Ordering::Release);
}
