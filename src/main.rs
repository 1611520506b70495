//! The `convstream` command line: parses arguments, sets up logging and signals, calls
//! into the library and maps errors to exit codes (0 ok, 1 runtime failure, 2 usage or
//! configuration error). The flags and handlers live in [`cli`].

mod cli;

use clap::Parser;
use std::process::ExitCode;

use cli::args::{Cli, Command, MasksAction};
use cli::{commands, run, Failure};

fn main() -> ExitCode {
    guard_standard_streams();
    let cli = Cli::parse_from(std::env::args_os().map(cli::spellings::ffmpeg_spellings));
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, error }) => {
            let message = format!("{error:#}");
            eprintln!("error: {}", convstream::text::redact_credentials(&message));
            ExitCode::from(code)
        }
    }
}

/// Process-wide settings that keep output failures visible. SIGXFSZ is ignored, so a write
/// past `ulimit -f` fails with EFBIG and is reported, instead of killing the process without
/// a word. A closed stdout (`>&-`) is recorded, so `-o -` is refused instead of writing
/// into the /dev/null the runtime put in its place.
fn guard_standard_streams() {
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Rust's runtime has already put /dev/null, opened read-write, in place of a closed
    // standard stream; a shell's `>/dev/null` opens it write-only. Read-write /dev/null on
    // stdout is taken for a closed stdout (a deliberate `1<>/dev/null` reads the same).
    // SAFETY: fcntl and fstat on descriptor 1 with a zeroed stat to fill.
    let closed = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        let mode = libc::fcntl(1, libc::F_GETFL);
        mode == -1
            || (mode & libc::O_ACCMODE == libc::O_RDWR
                && libc::fstat(1, &mut stat) == 0
                && stat.st_mode & libc::S_IFMT == libc::S_IFCHR
                && stat.st_rdev == libc::makedev(1, 3))
    };
    if closed {
        convstream::sink::mark_stdout_closed();
    }
}

fn try_main(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Check { config } => commands::check(&config),
        Command::Serve { config, listen } => commands::serve(config, listen),
        Command::Masks { action: None } => commands::list_masks(),
        Command::Masks {
            action: Some(MasksAction::Show { spec }),
        } => commands::show_mask(&spec),
        Command::Demo { dir, device } => commands::demo(&dir, device),
        Command::Doctor => commands::print_out(&convstream::doctor::report()),
        Command::Bench(args) => commands::bench(*args),
    }
}
