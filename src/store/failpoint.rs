//! Failpoints for the crash-safety tests, compiled only with the
//! `test-hooks` feature (which `cargo test` turns on). In every other build
//! each point is an empty inline function: the release binary holds neither
//! the points' names nor `LEASEJOURNAL_FAILPOINTS`.

#[cfg(feature = "test-hooks")]
pub use hooks::{hit, is, replaced, truncate};
#[cfg(not(feature = "test-hooks"))]
pub use inert::{hit, is, replaced, truncate};

#[cfg(feature = "test-hooks")]
mod hooks {
    use std::fs::{self, File};
    use std::io;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// Failpoints for the crash-safety tests: `LEASEJOURNAL_FAILPOINTS` holds
    /// `name=action` pairs separated by commas; `kill` sends SIGKILL to this
    /// process, `error` fails with an I/O error ("no space left on device"),
    /// `pause:PATH` creates `PATH.reached` and waits (up to 60 s) for
    /// `PATH.continue`; `truncate` (at `temp-written` only) halves the
    /// temporary file, and `check-thread=none` makes `durable::write_new` and `durable::replace_in_place` check the
    /// file after writing it, as when no thread can be spawned.
    pub fn hit(name: &str) -> io::Result<()> {
        for action in actions(name) {
            if action == "kill" {
                // SAFETY: raise has no preconditions; SIGKILL ends the process.
                unsafe {
                    libc::raise(libc::SIGKILL);
                }
            } else if action == "error" {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            } else if let Some(path) = action.strip_prefix("pause:") {
                fs::write(format!("{path}.reached"), b"")?;
                let deadline = Instant::now() + Duration::from_secs(60);
                while !Path::new(&format!("{path}.continue")).exists() && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        Ok(())
    }

    /// The actions set for the failpoint `name`, in order.
    fn actions(name: &str) -> Vec<String> {
        let spec = std::env::var("LEASEJOURNAL_FAILPOINTS").unwrap_or_default();
        spec.split(',')
            .filter_map(|item| item.split_once('='))
            .filter(|(point, _)| *point == name)
            .map(|(_, action)| action.to_string())
            .collect()
    }

    /// Whether the failpoint `name` is set to `action`.
    pub fn is(name: &str, action: &str) -> bool {
        actions(name).iter().any(|a| a == action)
    }

    /// The file the tests put in place of the system file `name`
    /// (`mountinfo`, `proc-locks`): `LEASEJOURNAL_TEST_FILES` holds
    /// `name=path` pairs separated by commas.
    pub fn replaced(name: &str) -> Option<std::path::PathBuf> {
        let spec = std::env::var("LEASEJOURNAL_TEST_FILES").ok()?;
        spec.split(',')
            .filter_map(|item| item.split_once('='))
            .find(|(file, _)| *file == name)
            .map(|(_, path)| std::path::PathBuf::from(path))
    }

    /// The failpoint action `truncate` at `name`: cuts `file` to half its
    /// length, so the tests can show that a result which does not replay to
    /// the plan is never published.
    pub fn truncate(name: &str, file: &File) -> io::Result<()> {
        if is(name, "truncate") {
            let len = file.metadata()?.len();
            file.set_len(len / 2)?;
        }
        Ok(())
    }
}

/// The points of a build without test hooks: none fires.
#[cfg(not(feature = "test-hooks"))]
mod inert {
    use std::fs::File;
    use std::io;

    /// Never fails.
    #[inline(always)]
    pub fn hit(_name: &str) -> io::Result<()> {
        Ok(())
    }

    /// Never set.
    #[inline(always)]
    pub fn is(_name: &str, _action: &str) -> bool {
        false
    }

    /// Never replaced: the system's own files are read.
    #[inline(always)]
    pub fn replaced(_name: &str) -> Option<std::path::PathBuf> {
        None
    }

    /// Never cuts.
    #[inline(always)]
    pub fn truncate(_name: &str, _file: &File) -> io::Result<()> {
        Ok(())
    }
}
