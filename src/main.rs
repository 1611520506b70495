//! The `convstream` command line: parses arguments, sets up logging and signals, calls
//! into the library and maps errors to exit codes (0 ok, 1 runtime failure, 2 usage or
//! configuration error). The flags and handlers live in [`cli`].

mod cli;
mod doctor;

use clap::Parser;
use std::process::ExitCode;

use cli::args::{Cli, Command, MasksAction};
use cli::{commands, run, Failure};

fn main() -> ExitCode {
    guard_standard_streams();
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let status = match try_main(cli) {
        Ok(()) => 0,
        Err(Failure { code, error }) => {
            // Credentials hidden, control characters escaped: a message may quote a config's bytes.
            let message = convstream_core::for_terminal(&format!("{error:#}"));
            // A run stopped by a signal ended as asked: its line is news, not an error.
            match code {
                128.. => eprintln!("{message}"),
                _ => eprintln!("error: {message}"),
            }
            code
        }
    };
    // A GPU still being set up in the background (a clip that ended first) is let finish:
    // exiting while a thread is inside the driver's initialisation can abort the process.
    // Bounded, so a hung driver cannot keep it.
    convstream_core::wait_for_gpu_starts(std::time::Duration::from_secs(3));
    // Last: with JSON logs, the line above is logged as JSON too before stderr is restored.
    cli::logging::finish_logging();
    // Everything is written: a process that used a GPU skips the driver's teardown.
    cli::exit::end(status)
}

/// The command line, FFmpeg's spellings read as convstream's flags; on an error (or
/// `--help`), what clap prints, naming each flag as it was typed, and the exit code.
fn parse_command_line() -> Result<Cli, ExitCode> {
    use clap::CommandFactory;
    let value_flags: Vec<String> = Cli::command()
        .find_subcommand("run")
        .map(|run| {
            run.get_arguments()
                .filter(|arg| arg.get_action().takes_values())
                .flat_map(|arg| {
                    let long = arg.get_long().map(|long| format!("--{long}"));
                    let short = arg.get_short().map(|short| format!("-{short}"));
                    long.into_iter().chain(short)
                })
                .collect()
        })
        .unwrap_or_default();
    let rewritten = cli::spellings::rewrite(std::env::args_os().collect(), &value_flags).map_err(|e| {
        eprintln!("error: {}", convstream_core::for_terminal(&e.to_string()));
        ExitCode::from(2)
    })?;
    Cli::try_parse_from(&rewritten.args).map_err(|error| {
        if !error.use_stderr() {
            // --help and --version: printed as they are, exit 0.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        let text = cli::spellings::as_typed(&error_quoting_escaped_words(error, &rewritten.args), &rewritten.typed);
        eprint!("{}", convstream_core::for_terminal(&text));
        ExitCode::from(2)
    })
}

/// clap's message for a command line it refused, with every word it quotes escaped as every
/// user string is (`--border $'x\nFAKE'` cannot start a line of its own): the words are
/// parsed again, each escaped, which splits them as before and refuses them the same way.
fn error_quoting_escaped_words(error: clap::Error, args: &[std::ffi::OsString]) -> String {
    let escaped: Vec<std::ffi::OsString> = args
        .iter()
        .map(|arg| match arg.to_str() {
            Some(word) => convstream_core::escape_control(word).into_owned().into(),
            None => arg.clone(),
        })
        .collect();
    if escaped == args {
        return error.render().to_string();
    }
    match Cli::try_parse_from(&escaped) {
        Err(again) if again.kind() == error.kind() => again.render().to_string(),
        // Escaping changed the verdict (a word valid only with its control characters): the
        // whole message is escaped, its own line breaks too.
        _ => {
            let rendered = error.render().to_string();
            format!("{}\n", convstream_core::escape_control(rendered.trim_end()))
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
        convstream_media::mark_stdout_closed();
    }
}

fn try_main(cli: Cli) -> Result<(), Failure> {
    // Configs read `filter.graph` with libavfilter, as `-vf` is read.
    convstream_media::install_graph_reader();
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Check { config, shards } => commands::check(&config, shards),
        Command::Serve { config, listen, shard } => commands::serve(config, listen, shard),
        Command::Masks { action: None } => commands::list_masks(),
        Command::Masks {
            action: Some(MasksAction::Show { spec }),
        } => commands::show_mask(&spec),
        Command::Demo { dir, device } => commands::demo(&dir, device),
        Command::Doctor => commands::print_out(&doctor::report()),
        Command::Bench(args) => commands::bench(*args),
        Command::Kernels { action } => cli::kernels::kernels(action),
    }
}
