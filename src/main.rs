//! The `leasejournal` binary: parse, delegate, return the exit code.

fn main() -> std::process::ExitCode {
    leasejournal::cli::main()
}
